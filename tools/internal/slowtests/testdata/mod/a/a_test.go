package a

import (
	"testing"

	"github.com/fsbench/fsbench/internal/testkit/slow"
)

func TestDirect(t *testing.T) { slow.Need(t, "boots") }

func TestThroughHelper(t *testing.T) { needGuest(t) }

func TestFast(t *testing.T) {}

func TestSubtest(t *testing.T) {
	t.Run("guest", func(t *testing.T) { slow.Need(t, "boots") })
}

func needGuest(t *testing.T) { deeper(t) }

func deeper(t *testing.T) { slow.Need(t, "boots") }

func TestReducedUnlessSlow(t *testing.T) {
	if slow.Enabled() {
		t.Log("the whole test")
	}
}
