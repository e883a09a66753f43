package flash

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSnapshotCoversModel: every field of Model is either saved by MarshalBinary or derived by
// NewModel from the profile and size again (or the scratch state of one request). A field
// added to Model without either fails here: a resumed endurance run would lose it.
func TestSnapshotCoversModel(t *testing.T) {
	saved := []string{"p", "size", "c", "erases", "valid", "pool", "auMap", "auFree", "auDirty", "open", "clock", "cache", "cacheSet", "log", "logAU", "slc", "wear"}
	derived := []string{"ps", "nPages", "ppau", "ebPerAU", "pmPages", "auBase", "logMax", "lat", "merges"}
	typ := reflect.TypeOf(Model{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if !slices.Contains(saved, name) && !slices.Contains(derived, name) {
			t.Errorf("Model.%s is neither saved by MarshalBinary nor derived by NewModel: add it to the snapshot (snapshot.go) and to this list", name)
		}
	}
}

// TestSnapshotRoundTrip: a card saved and loaded again is the same card: the same requests
// after it give the same latencies and counters as on the card that went on, on every built-in
// profile, worn blocks and spares included.
func TestSnapshotRoundTrip(t *testing.T) {
	for _, name := range Builtins() {
		t.Run(name, func(t *testing.T) {
			p, _ := Lookup(name)
			base, err := NewModel(p, 64*MiB)
			if err != nil {
				t.Fatal(err)
			}
			a, err := base.WithEndurance(5, 60/float64(p.Endurance))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			req := func() Request {
				switch rng.IntN(10) {
				case 0:
					return Request{Op: OpFlush}
				case 1:
					return Request{Op: OpDiscard, Off: rng.Uint64N(16) * 4 * MiB, Len: 4 * MiB}
				case 2, 3:
					return Request{Op: OpRead, Off: rng.Uint64N(64*MiB/4096) * 4096, Len: 4096}
				}
				n := []uint64{4096, 16384, 512 * KiB}[rng.IntN(3)]
				return Request{Op: OpWrite, Off: rng.Uint64N(64*MiB/n) * n, Len: n}
			}
			// Saved while the card is healthy and has worn blocks replaced: the requests after
			// it wear it out.
			for a.WearOut().BadBlocks == 0 {
				a.Do(req())
			}
			data, err := a.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			b, err := LoadModel(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(a.Counters(), b.Counters()); diff != "" {
				t.Fatalf("counters after loading (-saved +loaded):\n%s", diff)
			}
			for i := range 20000 {
				r := req()
				la, ea := a.Do(r)
				lb, eb := b.Do(r)
				if la != lb || (ea == nil) != (eb == nil) {
					t.Fatalf("request %d %+v after loading: %v, %v on the saved card, %v, %v on the loaded one", i, r, la, ea, lb, eb)
				}
				if sa, sb := a.Corrupt(r.Off, r.Len), b.Corrupt(r.Off, r.Len); !reflect.DeepEqual(sa, sb) {
					t.Fatalf("request %d: wrong spans %v on the saved card, %v on the loaded one", i, sa, sb)
				}
			}
			if diff := cmp.Diff(a.Counters(), b.Counters()); diff != "" {
				t.Errorf("counters after the same requests (-saved +loaded):\n%s", diff)
			}
			if a.Health() == Healthy {
				t.Errorf("the card did not wear out after the snapshot: %+v", a.WearOut())
			}
		})
	}
	if _, err := LoadModel([]byte("not a card")); err == nil {
		t.Error("garbage loaded as a card")
	}
}
