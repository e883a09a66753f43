package flash

import (
	"fmt"
	"reflect"
	"slices"
)

// CardProfile resolves a card profile given by name or file, for a run: trace replays are
// recorded by profile name, so a file that reuses a built-in profile's name must be that
// profile unchanged.
func CardProfile(spec string) (Profile, error) {
	p, err := Lookup(spec)
	if err != nil {
		return p, fmt.Errorf("card profile %s: %w", spec, err)
	}
	if slices.Contains(Builtins(), p.Name) && p.Name != spec {
		if b, err := Lookup(p.Name); err == nil && !reflect.DeepEqual(b, p) {
			return p, fmt.Errorf("card profile %s is named %q like the built-in profile but differs from it: give it a name of its own (the name key in the file)", spec, p.Name)
		}
	}
	return p, nil
}
