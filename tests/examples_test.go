package tests

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The examples that reach the world, served as `luamcp serve --dir
// examples` would, driven by the official Go SDK client. None of them runs
// in parallel: they set environment variables.

// startExample mounts examples/<name>.lua, with the extra files given
// (relative to examples/), on a fresh host.
func startExample(t *testing.T, name string, extra ...string) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range append([]string{name + ".lua"}, extra...) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, filepath.Join("..", "examples", f), filepath.Join(dir, f))
	}
	return startHost(t, dir), dir
}

// fakeOpenMeteo serves the two Open-Meteo endpoints weather.lua calls, with
// the shapes of the real API's answers.
func fakeOpenMeteo(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/search", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if r.URL.Query().Get("name") != "Lisbon" || r.URL.Query().Get("count") != "1" {
			w.Write([]byte(`{"generationtime_ms":0.1}`))
			return
		}
		w.Write([]byte(`{"results":[{"id":2267057,"name":"Lisbon","latitude":38.71667,"longitude":-9.13333,` +
			`"elevation":45.0,"country_code":"PT","timezone":"Europe/Lisbon","country":"Portugal"}],"generationtime_ms":0.5}`))
	})
	mux.HandleFunc("/v1/forecast", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if q.Get("latitude") != "38.71667" || q.Get("longitude") != "-9.13333" || q.Get("forecast_days") != "2" ||
			!strings.Contains(q.Get("daily"), "temperature_2m_max") {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":true,"reason":"unexpected query ` + r.URL.RawQuery + `"}`))
			return
		}
		w.Write([]byte(`{"latitude":38.7,"longitude":-9.14,"timezone":"Europe/Lisbon","daily_units":{"time":"iso8601"},` +
			`"daily":{"time":["2026-12-03","2026-12-04"],"weather_code":[3,61],"temperature_2m_max":[16.2,14.9],` +
			`"temperature_2m_min":[9.8,10.1],"precipitation_sum":[0.0,4.2]}}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestExampleWeather(t *testing.T) {
	api := fakeOpenMeteo(t)
	t.Setenv("WEATHER_API", api.URL) // read when the script loads ($WEATHER_API) and on each call
	s, _ := startExample(t, "weather")
	if g := s.host.Routes()[0].Grants.String(); !strings.Contains(g, "http: geocoding-api.open-meteo.com, api.open-meteo.com, "+strings.TrimPrefix(api.URL, "http://")) {
		t.Errorf("grants %q do not include the fake API", g)
	}
	c := connectGo(t, s.url("weather"), nil, latestVersion)
	defer c.close()

	res := c.call(t, "get_forecast", map[string]any{"city": "Lisbon", "days": 2})
	want := "Forecast for Lisbon, Portugal:\n2026-12-03: overcast, 9.8 to 16.2 °C, 0 mm\n2026-12-04: light rain, 10.1 to 14.9 °C, 4.2 mm"
	if got := goText(t, res); got != want || res.IsError {
		t.Errorf("get_forecast = %q (isError %v), want %q", got, res.IsError, want)
	}
	var forecast struct {
		City, Country string
		Days          []struct {
			Date, Condition string
			HighC           float64 `json:"high_c"`
		}
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &forecast); err != nil || forecast.Country != "Portugal" || len(forecast.Days) != 2 || forecast.Days[1].HighC != 14.9 {
		t.Errorf("structured content %s (%v)", b, err)
	}
	res = c.call(t, "get_forecast", map[string]any{"city": "Atlantis"})
	if got := goText(t, res); got != "no place called Atlantis" || !res.IsError {
		t.Errorf("get_forecast(Atlantis) = %q (isError %v)", got, res.IsError)
	}
	res = c.call(t, "get_forecast", map[string]any{"city": "Lisbon", "days": 5})
	if got := goText(t, res); !strings.HasPrefix(got, "the weather service answered 400: unexpected query") || !res.IsError {
		t.Errorf("get_forecast(days 5) = %q (isError %v)", got, res.IsError)
	}
}

func TestExampleFiles(t *testing.T) {
	s, dir := startExample(t, "files", "notes/welcome.md")
	c := connectGo(t, s.url("files"), nil, latestVersion)
	defer c.close()
	for _, step := range []struct {
		tool    string
		args    map[string]any
		want    string // a part of the text
		isError bool
	}{
		{"list_notes", nil, "welcome.md  (", false},
		{"write_note", map[string]any{"name": "plans", "text": "ship the release\n"}, "saved notes/plans.md (17 bytes)", false},
		{"write_note", map[string]any{"name": "plans", "text": "deadline: friday\n", "append": true}, "saved notes/plans.md (34 bytes)", false},
		{"read_note", map[string]any{"name": "plans.md"}, "ship the release\ndeadline: friday\n", false},
		{"search_notes", map[string]any{"query": "DEADLINE|todo"}, "plans.md:2: deadline: friday", false},
		{"search_notes", map[string]any{"query": "DEADLINE|todo"}, "welcome.md:7: - TODO:", false},
		{"search_notes", map[string]any{"query": "("}, "bad search pattern: re: error parsing regexp", true},
		{"read_note", map[string]any{"name": "../files.lua"}, "a note name is 1 to 100 letters", true},
		{"read_note", map[string]any{"name": "absent"}, "fs: notes/absent.md: not found", true},
	} {
		res := c.call(t, step.tool, step.args)
		if got := goText(t, res); !strings.Contains(got, step.want) || res.IsError != step.isError {
			t.Errorf("%s(%v) = %q (isError %v), want %q (isError %v)", step.tool, step.args, got, res.IsError, step.want, step.isError)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes", "plans.md")); err != nil || string(b) != "ship the release\ndeadline: friday\n" {
		t.Errorf("notes/plans.md = %q, %v", b, err)
	}
}

func TestExampleGit(t *testing.T) {
	repo := t.TempDir()
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada",
			"GIT_COMMITTER_EMAIL=ada@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "main.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn("add", "main.txt")
	gitIn("commit", "-q", "-m", "first commit")
	if err := os.WriteFile(filepath.Join(repo, "main.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn("commit", "-q", "-am", "second commit")
	if err := os.WriteFile(filepath.Join(repo, "main.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_REPO", repo)

	s, _ := startExample(t, "git")
	c := connectGo(t, s.url("git"), nil, latestVersion)
	defer c.close()
	for _, step := range []struct {
		tool    string
		args    map[string]any
		want    string
		isError bool
	}{
		{"git_log", map[string]any{"n": 5}, "2026-01-02  Ada  second commit\n", false},
		{"git_log", map[string]any{"n": 5}, "2026-01-02  Ada  first commit", false},
		{"git_diff", nil, "+three", false},
		{"git_diff", map[string]any{"rev": "HEAD~1..HEAD", "path": "main.txt"}, "+two", false},
		{"git_blame", map[string]any{"path": "main.txt", "start_line": 2, "end_line": 2}, "(Ada 2026-01-02 2) two", false},
		{"git_diff", map[string]any{"rev": "--output=/tmp/pwned"}, "a revision is letters", true},
		{"git_blame", map[string]any{"path": "nope.txt"}, "git blame failed: fatal:", true},
	} {
		res := c.call(t, step.tool, step.args)
		if got := goText(t, res); !strings.Contains(got, step.want) || res.IsError != step.isError {
			t.Errorf("%s(%v) = %q (isError %v), want %q (isError %v)", step.tool, step.args, got, res.IsError, step.want, step.isError)
		}
	}
}
