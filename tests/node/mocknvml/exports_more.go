package main

/*
#include <stdlib.h>
#include <string.h>
#include "nvml_abi.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

//export nvmlDeviceGetMigDeviceHandleByIndex
func nvmlDeviceGetMigDeviceHandleByIndex(h C.nvmlDevice_t, index C.uint, into *C.nvmlDevice_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if int(index) >= len(g.migs) {
		return ret(nvml.ERROR_NOT_FOUND)
	}
	*into = handleOf(g.migs[index])
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceIsMigDeviceHandle
func nvmlDeviceIsMigDeviceHandle(h C.nvmlDevice_t, isMig *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	*isMig = 0
	if g.parent != nil {
		*isMig = 1
	}
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetDeviceHandleFromMigDeviceHandle
func nvmlDeviceGetDeviceHandleFromMigDeviceHandle(h C.nvmlDevice_t, into *C.nvmlDevice_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if g.parent == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	*into = handleOf(g.parent)
	return ret(nvml.SUCCESS)
}

func migField(h C.nvmlDevice_t, into *C.uint, field func(*gpu) uint32) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if g.parent == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	*into = C.uint(field(g))
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetGpuInstanceId
func nvmlDeviceGetGpuInstanceId(h C.nvmlDevice_t, into *C.uint) C.nvmlReturn_t {
	return migField(h, into, func(g *gpu) uint32 { return g.gpuInstance })
}

//export nvmlDeviceGetComputeInstanceId
func nvmlDeviceGetComputeInstanceId(h C.nvmlDevice_t, into *C.uint) C.nvmlReturn_t {
	return migField(h, into, func(g *gpu) uint32 { return g.compute })
}

func attributes(h C.nvmlDevice_t, into *C.nvmlDeviceAttributes_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if g.parent == nil {
		return ret(nvml.ERROR_NOT_SUPPORTED)
	}
	a := g.attributes
	into.multiprocessorCount = C.uint(a.MultiprocessorCount)
	into.sharedCopyEngineCount = C.uint(a.SharedCopyEngineCount)
	into.sharedDecoderCount = C.uint(a.SharedDecoderCount)
	into.sharedEncoderCount = C.uint(a.SharedEncoderCount)
	into.sharedJpegCount = C.uint(a.SharedJpegCount)
	into.sharedOfaCount = C.uint(a.SharedOfaCount)
	into.gpuInstanceSliceCount = C.uint(a.GpuInstanceSliceCount)
	into.computeInstanceSliceCount = C.uint(a.ComputeInstanceSliceCount)
	into.memorySizeMB = C.ulonglong(a.MemorySizeMB)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetAttributes_v2
func nvmlDeviceGetAttributes_v2(h C.nvmlDevice_t, into *C.nvmlDeviceAttributes_t) C.nvmlReturn_t {
	return attributes(h, into)
}

//export nvmlDeviceGetAttributes
func nvmlDeviceGetAttributes(h C.nvmlDevice_t, into *C.nvmlDeviceAttributes_t) C.nvmlReturn_t {
	return attributes(h, into)
}

//export nvmlDeviceGetCudaComputeCapability
func nvmlDeviceGetCudaComputeCapability(h C.nvmlDevice_t, major, minor *C.int) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	ma, mi, _ := g.device.GetCudaComputeCapability()
	*major, *minor = C.int(ma), C.int(mi)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetBrand
func nvmlDeviceGetBrand(h C.nvmlDevice_t, brand *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	value, _ := g.device.GetBrand()
	*brand = C.uint(value)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetArchitecture
func nvmlDeviceGetArchitecture(h C.nvmlDevice_t, arch *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	value, _ := g.device.GetArchitecture()
	*arch = C.uint(value)
	return ret(nvml.SUCCESS)
}

func pciInfo(h C.nvmlDevice_t, into *C.nvmlPciInfo_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if g.parent != nil {
		g = g.parent
	}
	info, _ := g.device.GetPciInfo()
	into.domain, into.bus, into.device = 0, C.uint(g.index+1), 0
	into.pciDeviceId = C.uint(info.PciDeviceId)
	into.pciSubSystemId = 0
	busID := fmt.Sprintf("00000000:%02X:00.0", g.index+1)
	copyString(busID[4:], &into.busIdLegacy[0], 16)
	copyString(busID, &into.busId[0], 32)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetPciInfo_v3
func nvmlDeviceGetPciInfo_v3(h C.nvmlDevice_t, into *C.nvmlPciInfo_t) C.nvmlReturn_t {
	return pciInfo(h, into)
}

//export nvmlDeviceGetPciInfo
func nvmlDeviceGetPciInfo(h C.nvmlDevice_t, into *C.nvmlPciInfo_t) C.nvmlReturn_t {
	return pciInfo(h, into)
}

//export nvmlDeviceGetSupportedEventTypes
func nvmlDeviceGetSupportedEventTypes(h C.nvmlDevice_t, types *C.ulonglong) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	*types = eventsAll
	return ret(nvml.SUCCESS)
}

//export nvmlEventSetCreate
func nvmlEventSetCreate(into *C.nvmlEventSet_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	set := C.nvmlEventSet_t(C.malloc(1))
	eventSets[set] = &eventSet{watched: map[string]C.ulonglong{}, delivered: map[string]uint64{}}
	*into = set
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceRegisterEvents
func nvmlDeviceRegisterEvents(h C.nvmlDevice_t, types C.ulonglong, set C.nvmlEventSet_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	events := eventSets[set]
	if events == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	events.watched[g.uuid] |= types
	return ret(nvml.SUCCESS)
}

// nextEvent is a critical Xid the file gives a watched GPU and this set has not delivered.
func nextEvent(events *eventSet, data *C.nvmlEventData_t) bool {
	current.reload()
	for uuid, types := range events.watched {
		g := current.byUUID[uuid]
		if g == nil || types&eventXid == 0 || g.xid == 0 || events.delivered[uuid] == g.xid {
			continue
		}
		events.delivered[uuid] = g.xid
		data.device = handleOf(g)
		data.eventType = eventXid
		data.eventData = C.ulonglong(g.xid)
		data.gpuInstanceId, data.computeInstanceId = C.uint(^uint32(0)), C.uint(^uint32(0))
		return true
	}
	return false
}

func waitEvent(set C.nvmlEventSet_t, data *C.nvmlEventData_t, timeoutMs C.uint) C.nvmlReturn_t {
	deadline := time.Now().Add(time.Duration(timeoutMs) * time.Millisecond)
	for {
		mu.Lock()
		events := eventSets[set]
		if events == nil || current == nil {
			mu.Unlock()
			return ret(nvml.ERROR_INVALID_ARGUMENT)
		}
		found := nextEvent(events, data)
		mu.Unlock()
		if found {
			return ret(nvml.SUCCESS)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ret(nvml.ERROR_TIMEOUT)
		}
		time.Sleep(min(left, 200*time.Millisecond))
	}
}

//export nvmlEventSetWait_v2
func nvmlEventSetWait_v2(set C.nvmlEventSet_t, data *C.nvmlEventData_t, timeoutMs C.uint) C.nvmlReturn_t {
	return waitEvent(set, data, timeoutMs)
}

//export nvmlEventSetWait
func nvmlEventSetWait(set C.nvmlEventSet_t, data *C.nvmlEventData_t, timeoutMs C.uint) C.nvmlReturn_t {
	return waitEvent(set, data, timeoutMs)
}

//export nvmlEventSetFree
func nvmlEventSetFree(set C.nvmlEventSet_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if eventSets[set] == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	delete(eventSets, set)
	C.free(unsafe.Pointer(set))
	return ret(nvml.SUCCESS)
}

// The mock's GPUs hang off one CPU and have no NVLink: PCIe topology NODE between two GPUs,
// NOT_SUPPORTED for every NVLink query (go-gpuallocator's answer for "no link").

//export nvmlDeviceGetTopologyCommonAncestor
func nvmlDeviceGetTopologyCommonAncestor(h1, h2 C.nvmlDevice_t, level *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g1, code := lookup(h1)
	if g1 == nil {
		return code
	}
	g2, code := lookup(h2)
	if g2 == nil {
		return code
	}
	*level = C.uint(nvml.TOPOLOGY_NODE)
	if g1.uuid == g2.uuid {
		*level = C.uint(nvml.TOPOLOGY_INTERNAL)
	}
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetNvLinkState
func nvmlDeviceGetNvLinkState(h C.nvmlDevice_t, link C.uint, active *C.uint) C.nvmlReturn_t {
	return ret(nvml.ERROR_NOT_SUPPORTED)
}

//export nvmlDeviceGetNvLinkRemotePciInfo_v2
func nvmlDeviceGetNvLinkRemotePciInfo_v2(h C.nvmlDevice_t, link C.uint, info *C.nvmlPciInfo_t) C.nvmlReturn_t {
	return ret(nvml.ERROR_NOT_SUPPORTED)
}

func main() {}
