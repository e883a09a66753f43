package blockdev

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HostQueue is what the host does with a device's requests, from sysfs: how many it queues,
// how many the driver takes at once, and whether it treats the device as having a volatile
// cache. The SD application class A2 needs the host to use the card's command queue and its
// cache; these are the signs of that this host gives. A field is 0 or "" when its file is
// absent.
type HostQueue struct {
	// NrRequests is queue/nr_requests: the requests the block layer queues per hardware
	// queue (its scheduler's depth).
	NrRequests int `json:"nr_requests,omitempty"`
	// Scheduler is the I/O scheduler in use (queue/scheduler, the one in brackets).
	Scheduler string `json:"scheduler,omitempty"`
	// WriteCache is queue/write_cache: "write back" when the host sends flushes because the
	// device says it has a volatile cache (an eMMC's, an A2 SD card's when the kernel turned
	// it on), "write through" when it does not.
	WriteCache string `json:"write_cache,omitempty"`
	// HWQueues is the number of hardware queues (mq/*), Tags the requests the driver takes
	// from each at once (mq/0/nr_tags): for an SD card or eMMC, how many commands its host
	// driver keeps in flight.
	HWQueues int `json:"hw_queues,omitempty"`
	Tags     int `json:"tags,omitempty"`
	// DeviceQueueDepth is device/queue_depth (SCSI disks and USB card readers): the
	// commands the device accepts at once.
	DeviceQueueDepth int `json:"device_queue_depth,omitempty"`
	// Type is the MMC core's card type (device/type: "SD", "MMC") for an SD card or eMMC.
	Type string `json:"type,omitempty"`
}

// ReadHostQueue reads dev's HostQueue (a partition's are its disk's) under sysfs ("/sys").
func ReadHostQueue(sysfs, dev string) (HostQueue, error) {
	dir, err := devDir(sysfs, dev)
	if err != nil {
		return HostQueue{}, err
	}
	disk := diskDir(dir)
	var q HostQueue
	num := func(path string) int {
		s, err := readAttr(path)
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(s)
		return n
	}
	q.NrRequests = num(filepath.Join(disk, "queue", "nr_requests"))
	if s, err := readAttr(filepath.Join(disk, "queue", "scheduler")); err == nil {
		q.Scheduler = s
		if i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']'); i >= 0 && j > i {
			q.Scheduler = s[i+1 : j]
		}
	}
	q.WriteCache, _ = readAttr(filepath.Join(disk, "queue", "write_cache"))
	if ents, err := os.ReadDir(filepath.Join(disk, "mq")); err == nil {
		q.HWQueues = len(ents)
		if len(ents) > 0 {
			q.Tags = num(filepath.Join(disk, "mq", ents[0].Name(), "nr_tags"))
		}
	}
	q.DeviceQueueDepth = num(filepath.Join(disk, "device", "queue_depth"))
	q.Type, _ = readAttr(filepath.Join(disk, "device", "type"))
	return q, nil
}
