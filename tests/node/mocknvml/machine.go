// The mock machine: GPUs, MIG devices, processes and health failures read from a JSON file,
// modelled with go-nvml's mock server (github.com/NVIDIA/go-nvml/pkg/nvml/mock/server).
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// ConfigEnv names the machine file; DefaultConfig is where an image puts it.
const (
	ConfigEnv     = "GPU_SLOTS_MOCK_NVML_CONFIG"
	DefaultConfig = "/etc/gpu-slots/mock-nvml.json"
)

var models = map[string]gpus.Config{
	"A100-PCIE-40GB":  gpus.A100_PCIE_40GB,
	"A100-PCIE-80GB":  gpus.A100_PCIE_80GB,
	"A100-SXM4-40GB":  gpus.A100_SXM4_40GB,
	"A100-SXM4-80GB":  gpus.A100_SXM4_80GB,
	"A30-PCIE-24GB":   gpus.A30_PCIE_24GB,
	"H100-SXM5-80GB":  gpus.H100_SXM5_80GB,
	"H200-SXM5-141GB": gpus.H200_SXM5_141GB,
	"B200-SXM5-180GB": gpus.B200_SXM5_180GB,
}

type processFile struct {
	Pid           uint32 `json:"pid"`
	UsedMemoryMiB uint64 `json:"usedMemoryMiB"`
}

type migFile struct {
	Profile   string        `json:"profile"`
	UUID      string        `json:"uuid"`
	Processes []processFile `json:"processes"`
}

type gpuFile struct {
	Model          string        `json:"model"`
	Name           string        `json:"name"`
	UUID           string        `json:"uuid"`
	MemoryMiB      uint64        `json:"memoryMiB"`
	MemoryUsedMiB  uint64        `json:"memoryUsedMiB"`
	UtilizationPct uint32        `json:"utilizationPct"`
	MigDevices     []migFile     `json:"migDevices"`
	Processes      []processFile `json:"processes"`
	Xid            uint64        `json:"xid"`
}

type machineFile struct {
	DriverVersion     string    `json:"driverVersion"`
	CudaDriverVersion int       `json:"cudaDriverVersion"`
	GPUs              []gpuFile `json:"gpus"`
}

// gpu is one visible GPU or MIG device: the go-nvml mock object plus what the file adds.
type gpu struct {
	device      nvml.Device
	uuid        string
	index       int
	parent      *gpu
	migs        []*gpu
	gpuInstance uint32
	compute     uint32
	attributes  nvml.DeviceAttributes
	processes   []processFile
	usedMiB     uint64
	utilization uint32
	xid         uint64
	maxMig      uint32
}

type machine struct {
	server  *server.Server
	gpus    []*gpu
	byUUID  map[string]*gpu
	path    string
	modTime time.Time
}

var (
	mu      sync.Mutex
	current *machine
)

func configPath() string {
	if path := os.Getenv(ConfigEnv); path != "" {
		return path
	}
	return DefaultConfig
}

func readFile(path string) (machineFile, time.Time, error) {
	var file machineFile
	info, err := os.Stat(path)
	if err != nil {
		return file, time.Time{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return file, time.Time{}, err
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return file, time.Time{}, fmt.Errorf("%s: %w", path, err)
	}
	return file, info.ModTime(), nil
}

// stableUUID makes the UUID of a GPU or MIG device the file does not name.
func stableUUID(prefix, seed string) string {
	sum := sha256.Sum256([]byte("gpu-slots-mock-nvml/" + seed))
	h := fmt.Sprintf("%x", sum[:16])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", prefix, h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// visible applies NVIDIA_VISIBLE_DEVICES as the container runtime would: UUIDs or indexes.
func visible(all []gpuFile) []gpuFile {
	value, set := os.LookupEnv("NVIDIA_VISIBLE_DEVICES")
	value = strings.TrimSpace(value)
	if !set || value == "all" {
		return all
	}
	if value == "" || value == "void" || value == "none" {
		return nil
	}
	var kept []gpuFile
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		for i, g := range all {
			if g.UUID == item || strconv.Itoa(i) == item {
				kept = append(kept, g)
			}
		}
	}
	return kept
}

func withUUIDs(file machineFile) machineFile {
	for i := range file.GPUs {
		g := &file.GPUs[i]
		if g.UUID == "" {
			g.UUID = stableUUID("GPU", strconv.Itoa(i))
		}
		for j := range g.MigDevices {
			if g.MigDevices[j].UUID == "" {
				g.MigDevices[j].UUID = stableUUID("MIG", fmt.Sprintf("%s/%d", g.UUID, j))
			}
		}
	}
	return file
}

func build(path string) (*machine, error) {
	file, modTime, err := readFile(path)
	if err != nil {
		return nil, err
	}
	file = withUUIDs(file)
	shown := visible(file.GPUs)
	configs := make([]gpus.Config, len(shown))
	for i, g := range shown {
		model := g.Model
		if model == "" {
			model = "A100-SXM4-40GB"
		}
		config, known := models[model]
		if !known {
			return nil, fmt.Errorf("unknown model %q", model)
		}
		if g.Name != "" {
			config.Name = g.Name
		}
		if g.MemoryMiB != 0 {
			config.MemoryMB = g.MemoryMiB
		}
		configs[i] = config
	}
	driver := file.DriverVersion
	if driver == "" {
		driver = "550.54.15"
	}
	cuda := file.CudaDriverVersion
	if cuda == 0 {
		cuda = 12040
	}
	srv, err := server.New(
		server.WithGPUs(configs...),
		server.WithDriverVersion(driver),
		server.WithNVMLVersion("12."+driver),
		server.WithCUDADriverVersion(cuda),
	)
	if err != nil {
		return nil, err
	}
	m := &machine{server: srv, byUUID: map[string]*gpu{}, path: path, modTime: modTime}
	for i, g := range shown {
		device := srv.Devices[i].(*server.Device)
		device.UUID = g.UUID
		entry := &gpu{device: device, uuid: g.UUID, index: i}
		if err := addMigDevices(entry, device, g.MigDevices); err != nil {
			return nil, fmt.Errorf("GPU %s: %w", g.UUID, err)
		}
		m.gpus = append(m.gpus, entry)
		m.byUUID[g.UUID] = entry
		for _, mig := range entry.migs {
			m.byUUID[mig.uuid] = mig
		}
	}
	m.refresh(shown)
	return m, nil
}

func profileName(info nvml.GpuInstanceProfileInfo) string {
	return fmt.Sprintf("%dg.%dgb", info.SliceCount, (info.MemorySizeMB+1023)/1024)
}

// addMigDevices enables MIG mode and creates one GPU instance with a full compute instance
// per configured profile, through the mock's own MIG calls.
func addMigDevices(entry *gpu, device *server.Device, wanted []migFile) error {
	if len(wanted) == 0 {
		return nil
	}
	device.SetMigMode(nvml.DEVICE_MIG_ENABLE)
	ids := make([]int, 0, len(device.Config.MIGProfiles.GpuInstanceProfiles))
	for id, info := range device.Config.MIGProfiles.GpuInstanceProfiles {
		ids = append(ids, id)
		entry.maxMig = max(entry.maxMig, info.InstanceCount)
	}
	sort.Ints(ids)
	for _, mig := range wanted {
		var found *nvml.GpuInstanceProfileInfo
		for _, id := range ids {
			info := device.Config.MIGProfiles.GpuInstanceProfiles[id]
			if profileName(info) == mig.Profile {
				found = &info
				break
			}
		}
		if found == nil {
			return fmt.Errorf("no MIG profile %q", mig.Profile)
		}
		instance, ret := device.CreateGpuInstance(found)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("creating %s: %v", mig.Profile, ret)
		}
		giInfo, _ := instance.GetInfo()
		var compute nvml.ComputeInstanceProfileInfo
		for ci := 0; ci < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; ci++ {
			info, ret := instance.GetComputeInstanceProfileInfo(ci, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
			if ret == nvml.SUCCESS && info.SliceCount == found.SliceCount {
				compute = info
				break
			}
		}
		ci, ret := instance.CreateComputeInstance(&compute)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("compute instance of %s: %v", mig.Profile, ret)
		}
		ciInfo, _ := ci.GetInfo()
		entry.migs = append(entry.migs, &gpu{
			device:      device,
			uuid:        mig.UUID,
			index:       len(entry.migs),
			parent:      entry,
			gpuInstance: giInfo.Id,
			compute:     ciInfo.Id,
			attributes: nvml.DeviceAttributes{
				MultiprocessorCount:       compute.MultiprocessorCount,
				SharedCopyEngineCount:     compute.SharedCopyEngineCount,
				SharedDecoderCount:        compute.SharedDecoderCount,
				SharedEncoderCount:        compute.SharedEncoderCount,
				SharedJpegCount:           compute.SharedJpegCount,
				SharedOfaCount:            compute.SharedOfaCount,
				GpuInstanceSliceCount:     found.SliceCount,
				ComputeInstanceSliceCount: compute.SliceCount,
				MemorySizeMB:              found.MemorySizeMB,
			},
		})
	}
	return nil
}

// refresh takes what may change while a program runs: processes, memory, utilization, Xids.
func (m *machine) refresh(shown []gpuFile) {
	for _, g := range shown {
		entry := m.byUUID[g.UUID]
		if entry == nil {
			continue
		}
		entry.processes = g.Processes
		entry.usedMiB = g.MemoryUsedMiB
		entry.utilization = g.UtilizationPct
		entry.xid = g.Xid
		for j, mig := range g.MigDevices {
			if j < len(entry.migs) {
				entry.migs[j].processes = mig.Processes
			}
		}
	}
}

// reload re-reads the file when it changed; the GPUs themselves stay as at init.
func (m *machine) reload() {
	info, err := os.Stat(m.path)
	if err != nil || info.ModTime().Equal(m.modTime) {
		return
	}
	file, modTime, err := readFile(m.path)
	if err != nil {
		return
	}
	m.modTime = modTime
	m.refresh(visible(withUUIDs(file).GPUs))
}

func (g *gpu) memory() (total, used uint64) {
	if g.parent != nil {
		total = g.attributes.MemorySizeMB << 20
	} else {
		info, _ := g.device.GetMemoryInfo()
		total = info.Total
		used = g.usedMiB << 20
	}
	for _, p := range g.processes {
		used += p.UsedMemoryMiB << 20
	}
	for _, mig := range g.migs {
		_, migUsed := mig.memory()
		used += migUsed
	}
	if used > total {
		used = total
	}
	return total, used
}
