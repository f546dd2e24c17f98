-- weather.lua: a weather tool backed by a real HTTP API, in one file.
--
-- It asks Open-Meteo (https://open-meteo.com: free, no API key) for the
-- place, then for its forecast. A script reaches nothing by default: the
-- route's `allow` table below grants exactly the two hosts it calls, and
-- `luamcp serve` prints those grants on the route's line.
--
-- WEATHER_API, when set, sends both calls to another server with the same
-- API (a caching proxy, a mirror, or the fake one the tests run on
-- 127.0.0.1). The "$WEATHER_API" entry grants that server's host, and only
-- when the variable is set:
--
--   WEATHER_API=http://127.0.0.1:9000 luamcp serve --dir examples

local http = require("http")
local env = require("env")

local GEOCODING = "https://geocoding-api.open-meteo.com"
local FORECAST = "https://api.open-meteo.com"

-- WMO weather interpretation codes, as Open-Meteo reports them.
local CONDITIONS = {
  [0] = "clear sky", [1] = "mainly clear", [2] = "partly cloudy", [3] = "overcast",
  [45] = "fog", [48] = "rime fog",
  [51] = "light drizzle", [53] = "drizzle", [55] = "dense drizzle",
  [61] = "light rain", [63] = "rain", [65] = "heavy rain",
  [71] = "light snow", [73] = "snow", [75] = "heavy snow", [77] = "snow grains",
  [80] = "light showers", [81] = "showers", [82] = "violent showers",
  [85] = "snow showers", [86] = "heavy snow showers",
  [95] = "thunderstorm", [96] = "thunderstorm with hail", [99] = "thunderstorm with heavy hail",
}

-- get calls one endpoint and returns its decoded JSON body. Every failure
-- (refused, unreachable, an error status, not JSON) is nil, message: the
-- model reads the message and can tell the user.
local function get(base, path, query)
  local res, err = http.get((env.get("WEATHER_API") or base) .. path, { query = query, timeout_ms = 10000 })
  if not res then
    return nil, err
  end
  if res.status ~= 200 or not res.json then
    local reason = res.json and res.json.reason or res.body:sub(1, 200)
    return nil, string.format("the weather service answered %d: %s", res.status, reason)
  end
  return res.json
end

local function forecast(city, days)
  local places, err = get(GEOCODING, "/v1/search", { name = city, count = 1, language = "en", format = "json" })
  if not places then
    return nil, err
  end
  local place = places.results and places.results[1]
  if not place then
    return nil, "no place called " .. city
  end
  local data, ferr = get(FORECAST, "/v1/forecast", {
    latitude = place.latitude,
    longitude = place.longitude,
    daily = "weather_code,temperature_2m_max,temperature_2m_min,precipitation_sum",
    timezone = "auto",
    forecast_days = days,
  })
  if not data then
    return nil, ferr
  end
  local daily, list = data.daily, {}
  for i, date in ipairs(daily.time) do
    list[i] = {
      date = date,
      condition = CONDITIONS[daily.weather_code[i]] or ("weather code " .. tostring(daily.weather_code[i])),
      high_c = daily.temperature_2m_max[i],
      low_c = daily.temperature_2m_min[i],
      precipitation_mm = daily.precipitation_sum[i],
    }
  end
  return {
    city = place.name,
    country = place.country,
    latitude = place.latitude,
    longitude = place.longitude,
    days = list,
  }
end

---@type luamcp.Server
return {
  route = {
    allow = {
      http = { "geocoding-api.open-meteo.com", "api.open-meteo.com", "$WEATHER_API" },
      env = { "WEATHER_API" },
    },
  },

  init = function(params)
    return { name = "weather", version = "2.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return {
      {
        name = "get_forecast",
        title = "Weather forecast",
        description = "Daily weather forecast for a city, from Open-Meteo",
        input_schema = {
          type = "object",
          properties = {
            city = { type = "string", description = "City name, e.g. Lisbon" },
            days = { type = "integer", minimum = 1, maximum = 16, description = "Number of days (default 3)" },
          },
          required = { "city" },
        },
        output_schema = {
          type = "object",
          properties = {
            city = { type = "string" },
            country = { type = "string" },
            latitude = { type = "number" },
            longitude = { type = "number" },
            days = {
              type = "array",
              items = {
                type = "object",
                properties = {
                  date = { type = "string" },
                  condition = { type = "string" },
                  high_c = { type = "number" },
                  low_c = { type = "number" },
                  precipitation_mm = { type = "number" },
                },
                required = { "date", "condition", "high_c", "low_c" },
              },
            },
          },
          required = { "city", "days" },
        },
        annotations = { readOnlyHint = true, openWorldHint = true },
      },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    local city = args.city
    if type(city) ~= "string" or city == "" then
      return nil, "city must be a non-empty string"
    end
    local days = args.days or 3
    if type(days) ~= "number" or days ~= math.floor(days) or days < 1 or days > 16 then
      return nil, "days must be an integer from 1 to 16"
    end

    local result, err = forecast(city, days)
    if not result then
      return nil, err
    end
    local lines = { string.format("Forecast for %s, %s:", result.city, result.country or "?") }
    for _, d in ipairs(result.days) do
      lines[#lines + 1] = string.format("%s: %s, %g to %g °C, %g mm", d.date, d.condition, d.low_c, d.high_c,
        d.precipitation_mm or 0)
    end
    -- The text is for the model to read; structured_content is the same
    -- forecast as data, matching output_schema.
    return {
      content = { { type = "text", text = table.concat(lines, "\n") } },
      structured_content = result,
    }
  end,
}
