package labfarm

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The relay speaks labgrid's simplerest protocol: GET .../relay/INDEX/VALUE switches, GET
// .../relay/INDEX (the template with an empty value, trailing slash removed) reads "1" or "0".
func TestRelay(t *testing.T) {
	r, err := StartRelay()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	var refused bool
	r.OnSet = func(index int, on bool) error {
		if index == 9 {
			refused = true
			return errors.New("board 9 does not boot")
		}
		return nil
	}
	url := func(index, value string) string {
		u := strings.NewReplacer("{index}", index, "{value}", value).Replace(r.URL)
		return strings.TrimSuffix(u, "/")
	}
	tests := []struct {
		name, index, value string
		code               int
		body               string
	}{
		{"an outlet starts on", "0", "", 200, "1"},
		{"off", "0", "0", 200, "0"},
		{"reads off", "0", "", 200, "0"},
		{"on", "0", "1", 200, "1"},
		{"another outlet is independent", "1", "0", 200, "0"},
		{"still on", "0", "", 200, "1"},
		{"bad value", "0", "2", 400, ""},
		{"bad index", "x", "", 400, ""},
		{"a failing switch", "9", "1", 500, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(url(tc.index, tc.value))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || tc.body != "" && string(b) != tc.body {
				t.Errorf("GET %s: %d %q, want %d %q", url(tc.index, tc.value), resp.StatusCode, b, tc.code, tc.body)
			}
		})
	}
	if got := r.Switches(0); got != 2 {
		t.Errorf("outlet 0 switched %d times, want 2", got)
	}
	if !refused || r.Switches(9) != 0 {
		t.Errorf("a refused switch counts: refused %v, switches %d", refused, r.Switches(9))
	}
	if !strings.HasPrefix(r.URL, "http://127.0.0.1:") {
		t.Errorf("the relay listens on %s, not 127.0.0.1", r.URL)
	}
}
