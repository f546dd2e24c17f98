package serve

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/luamcp/luamcp/bench/internal/spec"
)

func TestStats(t *testing.T) {
	tests := []struct {
		name     string
		sessions func() int
		want     int
	}{
		{"unknown", nil, -1},
		{"counted", func() int { return 7 }, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeStats(rec, tt.sessions)
			var st spec.Stats
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			if st.ChurnSessions != tt.want || st.Goroutines < 1 || st.HeapAlloc == 0 || st.Sys < st.HeapInuse {
				t.Fatalf("stats %+v", st)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
		})
	}
}
