package board

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// PowerCut ends the board recorded in file the way a power cut does: QEMU is killed at once
// (SIGKILL), with no chance to flush its block layer, which SIGTERM would give it (QEMU closes
// its drives in order on SIGTERM, and a flush then reaches the card). The card stays, as a
// card stays in a board whose power went; the record goes. It ends exactly the recorded QEMU
// process, as Down does.
func PowerCut(file string) (*State, error) {
	s, err := load(file)
	if err != nil {
		return nil, err
	}
	if s.Alive() {
		syscall.Kill(s.PID, syscall.SIGKILL)
		for i := 0; i < 100 && s.Alive(); i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if s.Console != "" {
		os.Remove(s.Console)
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	return s, nil
}

// PowerCutArch is PowerCut for the board named name in stateDir.
func PowerCutArch(stateDir, name string) (*State, error) { return PowerCut(stateFile(stateDir, name)) }
