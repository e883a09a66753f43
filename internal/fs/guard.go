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

// checkDevice runs the context's device check on dev, if it has one.
func checkDevice(ctx context.Context, dev string) error {
	if check, ok := ctx.Value(deviceCheckKey{}).(DeviceCheck); ok && check != nil {
		return check(dev)
	}
	return nil
}
