// libnvidia-ml.so.1 for machines without a GPU: the NVML C functions the NVIDIA device
// plugin (through go-nvml and go-nvlib) and the agent (through pynvml) call, answered from
// the mock machine in machine.go. Built with `go build -buildmode=c-shared`.
package main

/*
#include <stdlib.h>
#include <string.h>
#include "nvml_abi.h"
*/
import "C"

import (
	"os"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

const (
	eventXid  = C.ulonglong(nvml.EventTypeXidCriticalError)
	eventsAll = C.ulonglong(nvml.EventTypeSingleBitEccError | nvml.EventTypeDoubleBitEccError | nvml.EventTypeXidCriticalError)
)

// Handles are small C allocations, stable per UUID for the life of the process.
var (
	handles   = map[string]C.nvmlDevice_t{}
	byHandle  = map[C.nvmlDevice_t]string{}
	messages  = map[C.nvmlReturn_t]*C.char{}
	eventSets = map[C.nvmlEventSet_t]*eventSet{}
	inits     int
)

type eventSet struct {
	watched   map[string]C.ulonglong
	delivered map[string]uint64
}

func ret(code nvml.Return) C.nvmlReturn_t { return C.nvmlReturn_t(code) }

func handleOf(g *gpu) C.nvmlDevice_t {
	if h, ok := handles[g.uuid]; ok {
		return h
	}
	h := C.nvmlDevice_t(C.malloc(1))
	handles[g.uuid] = h
	byHandle[h] = g.uuid
	return h
}

// lookup finds a handle's GPU; the lock is held by the caller.
func lookup(h C.nvmlDevice_t) (*gpu, C.nvmlReturn_t) {
	if current == nil {
		return nil, ret(nvml.ERROR_UNINITIALIZED)
	}
	g := current.byUUID[byHandle[h]]
	if g == nil {
		return nil, ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	return g, ret(nvml.SUCCESS)
}

func copyString(value string, into *C.char, length C.uint) C.nvmlReturn_t {
	if into == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	if C.uint(len(value)+1) > length {
		return ret(nvml.ERROR_INSUFFICIENT_SIZE)
	}
	text := C.CString(value)
	defer C.free(unsafe.Pointer(text))
	C.strncpy(into, text, C.size_t(length))
	return ret(nvml.SUCCESS)
}

func start() C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		built, err := build(configPath())
		if err != nil {
			os.Stderr.WriteString("mock NVML: " + err.Error() + "\n")
			if os.IsNotExist(err) {
				return ret(nvml.ERROR_DRIVER_NOT_LOADED)
			}
			return ret(nvml.ERROR_UNKNOWN)
		}
		current = built
	}
	inits++
	return ret(nvml.SUCCESS)
}

//export nvmlInit_v2
func nvmlInit_v2() C.nvmlReturn_t { return start() }

//export nvmlInit
func nvmlInit() C.nvmlReturn_t { return start() }

//export nvmlInitWithFlags
func nvmlInitWithFlags(flags C.uint) C.nvmlReturn_t { return start() }

//export nvmlShutdown
func nvmlShutdown() C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if inits == 0 {
		return ret(nvml.ERROR_UNINITIALIZED)
	}
	inits--
	if inits == 0 {
		current = nil
	}
	return ret(nvml.SUCCESS)
}

//export nvmlErrorString
func nvmlErrorString(code C.nvmlReturn_t) *C.char {
	mu.Lock()
	defer mu.Unlock()
	if text, ok := messages[code]; ok {
		return text
	}
	text := C.CString(nvml.Return(code).Error())
	messages[code] = text
	return text
}

//export nvmlSystemGetDriverVersion
func nvmlSystemGetDriverVersion(version *C.char, length C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return ret(nvml.ERROR_UNINITIALIZED)
	}
	return copyString(current.server.DriverVersion, version, length)
}

//export nvmlSystemGetNVMLVersion
func nvmlSystemGetNVMLVersion(version *C.char, length C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return ret(nvml.ERROR_UNINITIALIZED)
	}
	return copyString(current.server.NvmlVersion, version, length)
}

func cudaVersion(version *C.int) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return ret(nvml.ERROR_UNINITIALIZED)
	}
	*version = C.int(current.server.CudaDriverVersion)
	return ret(nvml.SUCCESS)
}

//export nvmlSystemGetCudaDriverVersion
func nvmlSystemGetCudaDriverVersion(version *C.int) C.nvmlReturn_t { return cudaVersion(version) }

//export nvmlSystemGetCudaDriverVersion_v2
func nvmlSystemGetCudaDriverVersion_v2(version *C.int) C.nvmlReturn_t { return cudaVersion(version) }

func count(into *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return ret(nvml.ERROR_UNINITIALIZED)
	}
	*into = C.uint(len(current.gpus))
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetCount_v2
func nvmlDeviceGetCount_v2(into *C.uint) C.nvmlReturn_t { return count(into) }

//export nvmlDeviceGetCount
func nvmlDeviceGetCount(into *C.uint) C.nvmlReturn_t { return count(into) }

func byIndex(index C.uint, into *C.nvmlDevice_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return ret(nvml.ERROR_UNINITIALIZED)
	}
	if int(index) >= len(current.gpus) {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	*into = handleOf(current.gpus[index])
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetHandleByIndex_v2
func nvmlDeviceGetHandleByIndex_v2(index C.uint, into *C.nvmlDevice_t) C.nvmlReturn_t {
	return byIndex(index, into)
}

//export nvmlDeviceGetHandleByIndex
func nvmlDeviceGetHandleByIndex(index C.uint, into *C.nvmlDevice_t) C.nvmlReturn_t {
	return byIndex(index, into)
}

//export nvmlDeviceGetHandleByUUID
func nvmlDeviceGetHandleByUUID(uuid *C.char, into *C.nvmlDevice_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return ret(nvml.ERROR_UNINITIALIZED)
	}
	g := current.byUUID[C.GoString(uuid)]
	if g == nil {
		return ret(nvml.ERROR_NOT_FOUND)
	}
	*into = handleOf(g)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetUUID
func nvmlDeviceGetUUID(h C.nvmlDevice_t, uuid *C.char, length C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	return copyString(g.uuid, uuid, length)
}

//export nvmlDeviceGetName
func nvmlDeviceGetName(h C.nvmlDevice_t, name *C.char, length C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	value, _ := g.device.GetName()
	if g.parent != nil {
		value += " MIG " + profileName(nvml.GpuInstanceProfileInfo{
			SliceCount: g.attributes.GpuInstanceSliceCount, MemorySizeMB: g.attributes.MemorySizeMB,
		})
	}
	return copyString(value, name, length)
}

//export nvmlDeviceGetIndex
func nvmlDeviceGetIndex(h C.nvmlDevice_t, index *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if g.parent != nil {
		g = g.parent
	}
	*index = C.uint(g.index)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetMinorNumber
func nvmlDeviceGetMinorNumber(h C.nvmlDevice_t, minor *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	value, _ := g.device.GetMinorNumber()
	*minor = C.uint(value)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetMemoryInfo
func nvmlDeviceGetMemoryInfo(h C.nvmlDevice_t, memory *C.nvmlMemory_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	current.reload()
	total, used := g.memory()
	memory.total, memory.used, memory.free = C.ulonglong(total), C.ulonglong(used), C.ulonglong(total-used)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetMemoryInfo_v2
func nvmlDeviceGetMemoryInfo_v2(h C.nvmlDevice_t, memory *C.nvmlMemory_v2_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	current.reload()
	total, used := g.memory()
	memory.total, memory.used, memory.free = C.ulonglong(total), C.ulonglong(used), C.ulonglong(total-used)
	memory.reserved = 0
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetUtilizationRates
func nvmlDeviceGetUtilizationRates(h C.nvmlDevice_t, rates *C.nvmlUtilization_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if g.parent != nil || len(g.migs) > 0 {
		return ret(nvml.ERROR_NOT_SUPPORTED) // as on MIG-enabled GPUs
	}
	current.reload()
	rates.gpu, rates.memory = C.uint(g.utilization), C.uint(g.utilization)
	return ret(nvml.SUCCESS)
}

func processes(h C.nvmlDevice_t, count *C.uint, infos *C.nvmlProcessInfo_t) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	current.reload()
	type row struct {
		process  processFile
		gi, ci   uint32
		hasOwner bool
	}
	var rows []row
	for _, p := range g.processes {
		rows = append(rows, row{process: p, gi: ^uint32(0), ci: ^uint32(0)})
		if g.parent != nil {
			rows[len(rows)-1].gi, rows[len(rows)-1].ci = g.gpuInstance, g.compute
		}
	}
	for _, mig := range g.migs {
		for _, p := range mig.processes {
			rows = append(rows, row{process: p, gi: mig.gpuInstance, ci: mig.compute})
		}
	}
	room := *count
	*count = C.uint(len(rows))
	if len(rows) == 0 {
		return ret(nvml.SUCCESS)
	}
	if infos == nil || room < C.uint(len(rows)) {
		return ret(nvml.ERROR_INSUFFICIENT_SIZE)
	}
	out := unsafe.Slice(infos, len(rows))
	for i, r := range rows {
		out[i].pid = C.uint(r.process.Pid)
		out[i].usedGpuMemory = C.ulonglong(r.process.UsedMemoryMiB << 20)
		out[i].gpuInstanceId, out[i].computeInstanceId = C.uint(r.gi), C.uint(r.ci)
	}
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetComputeRunningProcesses_v3
func nvmlDeviceGetComputeRunningProcesses_v3(h C.nvmlDevice_t, count *C.uint, infos *C.nvmlProcessInfo_t) C.nvmlReturn_t {
	return processes(h, count, infos)
}

//export nvmlDeviceGetComputeRunningProcesses_v2
func nvmlDeviceGetComputeRunningProcesses_v2(h C.nvmlDevice_t, count *C.uint, infos *C.nvmlProcessInfo_t) C.nvmlReturn_t {
	return processes(h, count, infos)
}

//export nvmlDeviceGetGraphicsRunningProcesses_v3
func nvmlDeviceGetGraphicsRunningProcesses_v3(h C.nvmlDevice_t, count *C.uint, infos *C.nvmlProcessInfo_t) C.nvmlReturn_t {
	*count = 0 // a compute-only machine
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetMigMode
func nvmlDeviceGetMigMode(h C.nvmlDevice_t, currentMode *C.uint, pending *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if g.parent != nil {
		return ret(nvml.ERROR_NOT_SUPPORTED)
	}
	mode, pendingMode, _ := g.device.GetMigMode()
	*currentMode, *pending = C.uint(mode), C.uint(pendingMode)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetMaxMigDeviceCount
func nvmlDeviceGetMaxMigDeviceCount(h C.nvmlDevice_t, into *C.uint) C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	g, code := lookup(h)
	if g == nil {
		return code
	}
	if mode, _, _ := g.device.GetMigMode(); g.parent != nil || mode != nvml.DEVICE_MIG_ENABLE {
		*into = 0
		return ret(nvml.SUCCESS)
	}
	*into = C.uint(g.maxMig)
	return ret(nvml.SUCCESS)
}
