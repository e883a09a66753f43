package capacity

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

type fileStat struct{ dev, ino uint64 }

func statFile(p string, st *fileStat) error {
	var s unix.Stat_t
	if err := unix.Stat(p, &s); err != nil {
		return err
	}
	st.dev, st.ino = uint64(s.Dev), s.Ino
	return nil
}
