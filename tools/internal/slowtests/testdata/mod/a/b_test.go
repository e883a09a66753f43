package a_test

import (
	"testing"

	emu "github.com/fsbench/fsbench/internal/testkit/slow"
)

func TestAliased(t *testing.T) { emu.Need(t, "farm") }

// Need of another package is not the slow package's.
type other struct{}

func (other) Need(t *testing.T, s string) {}

func TestOtherNeed(t *testing.T) { var slow other; slow.Need(t, "x") }
