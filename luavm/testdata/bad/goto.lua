local x = 1
goto nowhere
return {}
