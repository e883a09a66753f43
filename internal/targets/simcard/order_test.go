package simcard

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/iodepth"
	"github.com/fsbench/fsbench/internal/simcard"
)

// TestServedCardInHostOrder: the card takes the requests in the order the host sent them,
// however many are in the server at once (internal/simcard/order.go). The card written whole
// in order, three times, through a direct-I/O loop device with 32 requests in flight, fills its
// AUs in order: an AU card (sd-typical) merges none and copies no page. Taken in the order the
// server's goroutines reached the model, the same writes cost AU merges and copies.
func TestServedCardInHostOrder(t *testing.T) {
	requireFUSE(t)
	const size = 64 << 20
	sc, dev := directTestCard(t, SimcardOptions{Profile: "sd-typical", Size: size, TimeScale: 0, PathOffset: "off"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Three times over, 256 KiB sequential writes with 32 in flight (as fio's libaio engine).
	if _, err := iodepth.Run(ctx, int(dev.Fd()), iodepth.Job{Write: true, Block: 256 << 10, Size: size, Depth: 32, Bytes: 3 * size}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(sc.Dir(), simcard.StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	var st simcard.Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d AU merges, %d pages copied; at most %d requests in the server at once; %d taken out of order, %d after a gap",
		st.Counters.AUMerges, st.Counters.PagesCopied, st.MaxConcurrency, st.OutOfOrder, st.OrderWaits)
	if st.MaxConcurrency < 2 {
		t.Skipf("the requests reached the server one at a time (max_concurrency %d): nothing to put in order", st.MaxConcurrency)
	}
	// (A request or two may still come late: udev's reads of a new loop device, a flush;
	// Stats.OutOfOrder counts them. The writes are what the card's FTL sees in order.)
	if st.Counters.AUMerges != 0 || st.Counters.PagesCopied != 0 {
		t.Errorf("a card written whole in order: %d AU merges, %d pages copied; want none", st.Counters.AUMerges, st.Counters.PagesCopied)
	}
}
