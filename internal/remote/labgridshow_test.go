package remote

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseLabgridShow reads real `labgrid-client show` output (free.txt, acquired.txt,
// empty.txt were printed by labgrid 26.0.1; remote.txt is pprint's output for a remote
// exporter's resources, with wrapped strings, escapes, tuples and a proxy) and compares what
// fsbench makes of it with the golden .json beside each; a mismatch writes a .got file.
func TestParseLabgridShow(t *testing.T) {
	tests := []struct {
		file    string
		wantSSH LabgridSSH
		sshErr  string
		power   bool
	}{
		{"free.txt", LabgridSSH{Address: "127.0.0.1", Port: 22221, User: "root"}, "", true},
		{"acquired.txt", LabgridSSH{Address: "127.0.0.1", Port: 22221, User: "root"}, "", true},
		{"empty.txt", LabgridSSH{}, "has no NetworkService", false},
		{"remote.txt", LabgridSSH{Address: "fe80::2%eth1", Port: 2222, User: "root", Proxy: "exporter-host.example.org"}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			in := filepath.Join("testdata", "labgrid", tc.file)
			b, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ParseLabgridShow(string(b))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(p, "", "  ")
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, ".txt") + ".json"
			want, err := os.ReadFile(golden)
			if err != nil || !bytes.Equal(got, want) {
				os.WriteFile(golden+".got", got, 0o644)
				t.Errorf("parsed place differs from %s (see %s.got; copy it over when the change is right): %v", golden, golden, err)
			}
			s, err := p.NetworkService()
			if tc.sshErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.sshErr) {
					t.Errorf("NetworkService error %v, want %q", err, tc.sshErr)
				}
			} else if err != nil || s != tc.wantSSH {
				t.Errorf("NetworkService = %+v, %v; want %+v", s, err, tc.wantSSH)
			}
			if p.HasPower() != tc.power {
				t.Errorf("HasPower = %v", p.HasPower())
			}
		})
	}
}

func TestParseLabgridShowErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"not show output", "labgrid-client: Error: place pattern x matches nothing\n", "no \"Place"},
		{"broken resource line", "Place 'a':\n  acquired: None\nAcquired resource 'X' no path\n", "cannot read"},
		{"unterminated dict", "Place 'a':\nAcquired resource 'X' (e/g/X/X):\n  {'cls': 'X',\n", "unexpected end"},
		{"unterminated string", "Place 'a':\nAcquired resource 'X' (e/g/X/X):\n  {'cls': 'X}\n", "newline inside a string"},
		{"not a dict", "Place 'a':\nAcquired resource 'X' (e/g/X/X):\n  ['cls']\n", "not a dict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLabgridShow(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParsePyLiteral(t *testing.T) {
	tests := []struct {
		in   string
		want string // as JSON
	}{
		{"None", "null"},
		{"{'a': 1, 'b': [True, False, None], 'c': (1,)}", `{"a":1,"b":[true,false,null],"c":[1]}`},
		{"('abc'\n 'def')", `"abcdef"`},
		{`'\x41\u00e9\\\''`, `"Aé\\'"`},
		{"{1: -2.5e3}", `{"1":-2500}`},
		{"{}", "{}"},
	}
	for _, tc := range tests {
		v, err := parsePyLiteral(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		got, _ := json.Marshal(v)
		if string(got) != tc.want {
			t.Errorf("%q = %s, want %s", tc.in, got, tc.want)
		}
	}
}
