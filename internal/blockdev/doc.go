// Package blockdev reads what the kernel says about a block device: its identity and queue
// settings from sysfs, its I/O counters from /sys/block/<dev>/stat, its size from the
// BLKGETSIZE64 ioctl, and it can discard (BLKDISCARD) a range of it.
//
// Nothing here attaches, mounts or unmounts anything: that is internal/session's and
// internal/fs's job. Everything that reads sysfs takes the sysfs root as a parameter ("/sys"
// in production) so that tests can point it at a fake tree under testdata/.
package blockdev
