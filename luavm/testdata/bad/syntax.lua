-- A syntax error on line 3.
return {
  init = = 1,
}
