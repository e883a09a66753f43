package procid

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestParse(t *testing.T) {
	tail := " 1 1 0 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 123456 1000000 200"
	tests := []struct {
		name    string
		in      string
		want    Stat
		wantErr bool
	}{
		{"plain", "42 (fsbench) S" + tail, Stat{'S', 123456}, false},
		{"comm with spaces and parens", "42 (a) b (c)) Z" + tail, Stat{'Z', 123456}, false},
		{"no paren", "42 fsbench S" + tail, Stat{}, true},
		{"too short", "42 (x) S 1 1", Stat{}, true},
		{"bad start time", "42 (x) S 1 1 0 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 notanumber 1", Stat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got state %c start %d, want %c %d", got.State, got.StartTime, tt.want.State, tt.want.StartTime)
			}
		})
	}
}

// exited starts a process, waits for it to end and returns its ID.
func exited(t *testing.T) ID {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep (coreutils): %v", err)
	}
	st, err := Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	id := ID{PID: cmd.Process.Pid, StartTime: st.StartTime}
	cmd.Process.Kill()
	cmd.Wait()
	return id
}

func TestRunning(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.StartTime == 0 || self.BootID == "" {
		t.Fatalf("Self() = %+v: no start time or boot", self)
	}
	reused, earlier := self, self
	reused.StartTime--
	earlier.BootID = "00000000-0000-0000-0000-000000000000"
	noBoot := self
	noBoot.BootID = ""
	tests := []struct {
		name string
		id   ID
		want bool
	}{
		{"this process", self, true},
		{"this process, boot not recorded", noBoot, true},
		{"pid reused", reused, false},
		{"earlier boot", earlier, false},
		{"exited", exited(t), false},
		{"no pid", ID{}, false},
	}
	for _, tt := range tests {
		if got, why := tt.id.Running(); got != tt.want {
			t.Errorf("%s: Running() = %v (%s), want %v", tt.name, got, why, tt.want)
		}
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	if ents, err := ReadDir(filepath.Join(dir, "never-made")); err != nil || ents != nil {
		t.Errorf("ReadDir(missing) = %v, %v; want none, no error", ents, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if ents, err := ReadDir(dir); err != nil || len(ents) != 1 || ents[0].Name() != "1.json" {
		t.Errorf("ReadDir = %v, %v; want 1.json", ents, err)
	}
	file := filepath.Join(dir, "1.json")
	if _, err := ReadDir(file); err == nil {
		t.Errorf("ReadDir(a file) succeeded")
	}
}
