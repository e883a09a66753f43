package labfarm

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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

// One outlet's switching (an emulated board booting, tens of seconds) does not hold up
// another's: outlet 0's hook waits until outlet 1 has been switched.
func TestRelaySwitchesConcurrently(t *testing.T) {
	r, err := StartRelay()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	second := make(chan struct{})
	r.OnSet = func(index int, on bool) error {
		if index == 0 {
			select {
			case <-second:
			case <-time.After(10 * time.Second):
				return errors.New("outlet 1 was not switched while outlet 0 was")
			}
		} else {
			close(second)
		}
		return nil
	}
	url := func(index string) string {
		return strings.NewReplacer("{index}", index, "{value}", "1").Replace(r.URL)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(url("0"))
		if err == nil {
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				err = errors.New(string(b))
			}
			resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // outlet 0's hook is waiting
	resp, err := http.Get(url("1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
