package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
)

// fakeLabgridClient writes a labgrid-client that prints stderr and exits with code, as the
// real one does for each failure (messages copied from labgrid 26.0.1).
func fakeLabgridClient(t *testing.T, stderr string, code int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "labgrid-client")
	script := "#!/bin/sh\ncat >&2 <<'EOF'\n" + stderr + "\nEOF\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLabgridErrorMessages(t *testing.T) {
	tests := []struct {
		name   string
		stderr string
		input  bool // refused like a usage error (exit 2)
		busy   string
		want   string
	}{
		{"coordinator down", "ERROR              root: coordinator is unavailable: failed to connect to all addresses\nServer error: Error: Could not connect to coordinator",
			true, "", "cannot reach the labgrid coordinator at 127.0.0.1:9: start labgrid-coordinator"},
		{"no place", "labgrid-client: Error: place pattern nope matches nothing", true, "", `has no place "p"`},
		{"someone else's", "labgrid-client: Error: Place p is already acquired by desk/alice. To work simultaneously, alice can execute 'labgrid-client -p p allow host/bob' on desk.",
			true, "desk/alice", "is acquired by desk/alice: wait until it is released"},
		{"released by someone else", "labgrid-client: Error: place p is acquired by a different user (desk/alice), use --kick if you are sure",
			true, "desk/alice", "acquired by desk/alice"},
		{"already ours", "labgrid-client: Error: You have already acquired place p.", true, "", "already acquired by you"},
		{"anything else, after a traceback", "Traceback (most recent call last):\n  File x\nrequests.exceptions.ConnectionError: refused", false, "",
			"requests.exceptions.ConnectionError: refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lg, err := NewLabgrid("127.0.0.1:9", fakeLabgridClient(t, tc.stderr, 1))
			if err != nil {
				t.Fatal(err)
			}
			err = lg.Acquire(context.Background(), "p")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			var ie *plan.InputError
			if errors.As(err, &ie) != tc.input {
				t.Errorf("input error: %v, want %v", !tc.input, tc.input)
			}
			var be *PlaceBusyError
			if got := errors.As(err, &be); got != (tc.busy != "") || got && be.Holder != tc.busy {
				t.Errorf("busy error %+v, want holder %q", be, tc.busy)
			}
		})
	}
}

func TestNewLabgridFindsClient(t *testing.T) {
	fake := fakeLabgridClient(t, "", 0)
	tests := []struct {
		name, coordinator, program string
		env                        map[string]string
		wantCoordinator, wantErr   string
	}{
		{"flag wins", "10.0.0.1:20408", fake, map[string]string{"LG_COORDINATOR": "10.0.0.2:1"}, "10.0.0.1:20408", ""},
		{"LG_COORDINATOR", "", fake, map[string]string{"LG_COORDINATOR": "10.0.0.2:1"}, "10.0.0.2:1", ""},
		{"labgrid's default", "", fake, map[string]string{"LG_COORDINATOR": ""}, DefaultLabgridCoordinator, ""},
		{"FSBENCH_LABGRID_CLIENT", "", "", map[string]string{"FSBENCH_LABGRID_CLIENT": fake}, DefaultLabgridCoordinator, ""},
		{"missing", "", "", map[string]string{"FSBENCH_LABGRID_CLIENT": "/nonexistent/labgrid-client"}, "", "pip install labgrid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("LG_COORDINATOR", "")
			t.Setenv("FSBENCH_LABGRID_CLIENT", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			lg, err := NewLabgrid(tc.coordinator, tc.program)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || lg.Coordinator != tc.wantCoordinator || lg.Program != fake {
				t.Errorf("NewLabgrid = %+v, %v", lg, err)
			}
		})
	}
}

// A board is back when its SSH server speaks, not when something accepts a connection: QEMU's
// user network accepts on the forwarded port before the board's server listens.
func TestReadBanner(t *testing.T) {
	tests := []struct {
		name, said string
		ok         bool
	}{
		{"openssh", "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n", true},
		{"dropbear", "SSH-2.0-dropbear_2022.83\r\n", true},
		{"lines before the banner", "hello\r\nSSH-2.0-x\r\n", true},
		{"accepted, then closed", "", false},
		{"another server", "HTTP/1.1 400 Bad Request\r\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := readBanner(strings.NewReader(tc.said))
			if (err == nil) != tc.ok {
				t.Errorf("readBanner(%q) = %v, want ok %v", tc.said, err, tc.ok)
			}
		})
	}
}

// bannerAt reads the banner of a real listener on 127.0.0.1.
func TestBannerAt(t *testing.T) {
	for _, said := range []string{"SSH-2.0-test\r\n", ""} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := l.Accept()
			if err == nil {
				io.WriteString(c, said)
				c.Close()
			}
		}()
		err = bannerAt(context.Background(), l.Addr().String())
		l.Close()
		if (err == nil) != (said != "") {
			t.Errorf("server saying %q: %v", said, err)
		}
	}
}
