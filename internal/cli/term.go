package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminal reports whether f is a terminal and the user has not asked for plain output
// (NO_COLOR and TERM=dumb also turn off the live status line, which rewrites the line).
func terminal(f *os.File) bool {
	if os.Getenv("TERM") == "dumb" || os.Getenv("NO_COLOR") != "" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// StdIO returns the process's standard streams.
func StdIO() IO {
	return IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrIsTerminal: terminal(os.Stderr)}
}
