-- weather.lua: a weather tool an AI agent can call, in one file.
--
-- Drop this file into your scripts folder and run `luamcp serve`: it is
-- mounted at /mcp/weather and its tool is callable at once. The forecast is
-- made up (no network access: scripts run in a sandbox), but it has the
-- shape of a real one, so it shows the full loop: arguments in, text and
-- structured data out.

local CONDITIONS = { "sunny", "partly cloudy", "cloudy", "light rain", "showers", "windy" }

-- seed turns a city name into a number, so a city always gets the same
-- forecast.
local function seed(city)
  local n = 0
  for i = 1, #city do
    n = (n * 31 + city:byte(i)) % 1000003
  end
  return n
end

local function forecast(city, days)
  local base = seed(city:lower())
  local list = {}
  for day = 1, days do
    local n = base + day * 7919
    list[day] = {
      day = day,
      condition = CONDITIONS[n % #CONDITIONS + 1],
      high_c = 12 + n % 15,
      low_c = 3 + n % 9,
    }
  end
  return list
end

return {
  init = function(params)
    return { name = "weather", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return {
      {
        name = "get_forecast",
        title = "Weather forecast",
        description = "Daily weather forecast for a city",
        input_schema = {
          type = "object",
          properties = {
            city = { type = "string", description = "City name, e.g. Lisbon" },
            days = { type = "integer", minimum = 1, maximum = 7, description = "Number of days (default 3)" },
          },
          required = { "city" },
        },
        output_schema = {
          type = "object",
          properties = {
            city = { type = "string" },
            days = {
              type = "array",
              items = {
                type = "object",
                properties = {
                  day = { type = "integer" },
                  condition = { type = "string" },
                  high_c = { type = "number" },
                  low_c = { type = "number" },
                },
                required = { "day", "condition", "high_c", "low_c" },
              },
            },
          },
          required = { "city", "days" },
        },
        annotations = { readOnlyHint = true, openWorldHint = false },
      },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    local city = args.city
    if type(city) ~= "string" or city == "" then
      return nil, "city must be a non-empty string"
    end
    local days = args.days or 3
    if type(days) ~= "number" or days ~= math.floor(days) or days < 1 or days > 7 then
      return nil, "days must be an integer from 1 to 7"
    end

    local list = forecast(city, days)
    local lines = { "Forecast for " .. city .. ":" }
    for _, d in ipairs(list) do
      lines[#lines + 1] = string.format("day %d: %s, %d to %d °C", d.day, d.condition, d.low_c, d.high_c)
    end
    -- The text is for the model to read; structured_content is the same
    -- forecast as data, matching output_schema.
    return {
      content = { { type = "text", text = table.concat(lines, "\n") } },
      structured_content = { city = city, days = list },
    }
  end,
}
