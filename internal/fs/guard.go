package fs

import "context"

// A DeviceCheck says whether dev is still the device the run started on (nil), or what changed:
// a card swapped in a reader, a device the kernel renumbered after a reset.
type DeviceCheck func(dev string) error

type deviceCheckKey struct{}

// WithDeviceCheck makes every mkfs, fsck, free-space reading and mount this package runs against
// a device call check first, and refuse to touch the device when it fails: nothing is written to
// a device that is not the one the run was given.
func WithDeviceCheck(ctx context.Context, check DeviceCheck) context.Context {
	return context.WithValue(ctx, deviceCheckKey{}, check)
}

// VerifyDevice runs the context's device check on dev, if it has one: for fsbench's own writes
// to the device (the discard before mkfs, a read-only image copied onto it).
func VerifyDevice(ctx context.Context, dev string) error { return checkDevice(ctx, dev) }

type verifiedKey struct{}

// Verified runs the device check on dev now and returns a context in which the check of dev is
// taken as made: for a timed mkfs or mount, whose figure must not include the check (about
// 0.2 ms: a mount takes a few). The caller makes the timed call at once with it.
func Verified(ctx context.Context, dev string) (context.Context, error) {
	if err := checkDevice(ctx, dev); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, verifiedKey{}, dev), nil
}

// checkDevice runs the context's device check on dev, if it has one and Verified did not just
// run it.
func checkDevice(ctx context.Context, dev string) error {
	if v, _ := ctx.Value(verifiedKey{}).(string); v == dev {
		return nil
	}
	if check, ok := ctx.Value(deviceCheckKey{}).(DeviceCheck); ok && check != nil {
		return check(dev)
	}
	return nil
}
