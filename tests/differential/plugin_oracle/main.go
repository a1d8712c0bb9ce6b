// Command plugin_oracle answers, for each config.yaml text (and container env) read from stdin,
// what NVIDIA's k8s-device-plugin v0.19.3 makes of it: its own api/config/v1 package parses
// the file (spec.NewConfig, exactly as the plugin binary calls it), then the plugin's start-up
// checks (validateFlags in cmd/nvidia-device-plugin/main.go, repeated here because a main
// package cannot be imported) and DisableResourceNamingInConfig run. The flag list below is
// the plugin's own (same names, env vars and defaults), so env-over-file precedence is the
// plugin's too. Output: one JSON result per input, in order.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	spec "github.com/NVIDIA/k8s-device-plugin/api/config/v1"
	cli "github.com/urfave/cli/v2"
)

type request struct {
	ID   string            `json:"id"`
	Text string            `json:"text"`
	Env  map[string]string `json:"env"`
}

type entry struct {
	Name     string `json:"name"`
	Rename   string `json:"rename"`
	Replicas int    `json:"replicas"`
}

type answer struct {
	ID                         string  `json:"id"`
	Error                      string  `json:"error,omitempty"`
	Strategy                   string  `json:"strategy,omitempty"`
	MigStrategy                string  `json:"migStrategy,omitempty"`
	FailOnInitError            bool    `json:"failOnInitError"`
	RenameByDefault            bool    `json:"renameByDefault"`
	FailRequestsGreaterThanOne bool    `json:"failRequestsGreaterThanOne"`
	Resources                  []entry `json:"resources"`
}

func pluginFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "mig-strategy", Value: spec.MigStrategyNone, EnvVars: []string{"MIG_STRATEGY"}},
		&cli.BoolFlag{Name: "fail-on-init-error", Value: true, EnvVars: []string{"FAIL_ON_INIT_ERROR"}},
		&cli.StringFlag{Name: "driver-root", Aliases: []string{"nvidia-driver-root"}, Value: "/", EnvVars: []string{"NVIDIA_DRIVER_ROOT"}},
		&cli.StringFlag{Name: "dev-root", Aliases: []string{"nvidia-dev-root"}, EnvVars: []string{"NVIDIA_DEV_ROOT"}},
		&cli.BoolFlag{Name: "pass-device-specs", Value: false, EnvVars: []string{"PASS_DEVICE_SPECS"}},
		&cli.StringSliceFlag{Name: "device-list-strategy", Value: cli.NewStringSlice(spec.DeviceListStrategyEnvVar), EnvVars: []string{"DEVICE_LIST_STRATEGY"}},
		&cli.StringFlag{Name: "device-id-strategy", Value: spec.DeviceIDStrategyUUID, EnvVars: []string{"DEVICE_ID_STRATEGY"}},
		&cli.BoolFlag{Name: "gdrcopy-enabled", EnvVars: []string{"GDRCOPY_ENABLED"}},
		&cli.BoolFlag{Name: "gds-enabled", EnvVars: []string{"GDS_ENABLED"}},
		&cli.BoolFlag{Name: "mofed-enabled", EnvVars: []string{"MOFED_ENABLED"}},
		&cli.StringFlag{Name: "cdi-annotation-prefix", Value: spec.DefaultCDIAnnotationPrefix, EnvVars: []string{"CDI_ANNOTATION_PREFIX"}},
		&cli.StringFlag{Name: "nvidia-cdi-hook-path", Aliases: []string{"nvidia-ctk-path"}, Value: spec.DefaultNvidiaCTKPath, EnvVars: []string{"NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"}},
		&cli.StringFlag{Name: "driver-root-ctr-path", Aliases: []string{"container-driver-root"}, Value: spec.DefaultContainerDriverRoot, EnvVars: []string{"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"}},
		&cli.StringFlag{Name: "mps-root", EnvVars: []string{"MPS_ROOT"}},
		&cli.StringFlag{Name: "device-discovery-strategy", Value: "auto", EnvVars: []string{"DEVICE_DISCOVERY_STRATEGY"}},
		&cli.IntSliceFlag{Name: "imex-channel-ids", EnvVars: []string{"IMEX_CHANNEL_IDS"}},
		&cli.BoolFlag{Name: "imex-required", EnvVars: []string{"IMEX_REQUIRED"}},
		&cli.StringFlag{Name: "config-file", EnvVars: []string{"CONFIG_FILE"}},
	}
}

// validateFlags: the plugin's start-up checks (cmd/nvidia-device-plugin/main.go at v0.19.3),
// less the CDI-needs-NVML one (every node here has NVML).
func validateFlags(config *spec.Config) error {
	if _, err := spec.NewDeviceListStrategies(*config.Flags.Plugin.DeviceListStrategy); err != nil {
		return fmt.Errorf("invalid --device-list-strategy option: %v", err)
	}
	if id := *config.Flags.Plugin.DeviceIDStrategy; id != spec.DeviceIDStrategyUUID && id != spec.DeviceIDStrategyIndex {
		return fmt.Errorf("invalid --device-id-strategy option: %v", id)
	}
	if config.Sharing.SharingStrategy() == spec.SharingStrategyMPS {
		if *config.Flags.MigStrategy == spec.MigStrategyMixed {
			return fmt.Errorf("using --mig-strategy=mixed is not supported with MPS")
		}
		if config.Flags.MpsRoot == nil || *config.Flags.MpsRoot == "" {
			return fmt.Errorf("using MPS requires --mps-root to be specified")
		}
	}
	switch *config.Flags.DeviceDiscoveryStrategy {
	case "auto", "nvml", "tegra":
	default:
		return fmt.Errorf("invalid --device-discovery-strategy option %v", *config.Flags.DeviceDiscoveryStrategy)
	}
	switch *config.Flags.MigStrategy {
	case spec.MigStrategyNone, spec.MigStrategySingle, spec.MigStrategyMixed:
	default:
		return fmt.Errorf("unknown MIG strategy: %v", *config.Flags.MigStrategy)
	}
	if err := spec.AssertChannelIDsValid(config.Imex.ChannelIDs); err != nil {
		return fmt.Errorf("invalid IMEX channel IDs: %w", err)
	}
	return nil
}

func judge(req request, scratch string) answer {
	out := answer{ID: req.ID, Resources: []entry{}}
	path := filepath.Join(scratch, "config.yaml")
	if err := os.WriteFile(path, []byte(req.Text), 0o600); err != nil {
		panic(err)
	}
	os.Clearenv()
	for key, value := range req.Env {
		os.Setenv(key, value)
	}
	var config *spec.Config
	var failure error
	app := cli.NewApp()
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	app.Flags = pluginFlags()
	app.Action = func(c *cli.Context) error {
		var err error
		config, err = spec.NewConfig(c, app.Flags)
		if err != nil {
			return fmt.Errorf("unable to finalize config: %v", err)
		}
		config.Flags.GFD = nil
		if err := validateFlags(config); err != nil {
			return err
		}
		spec.DisableResourceNamingInConfig(config)
		return nil
	}
	args := []string{"plugin"}
	if req.Text != "" {
		args = append(args, "--config-file", path)
	}
	failure = app.Run(args)
	if failure != nil {
		out.Error = failure.Error()
		return out
	}
	out.Strategy = string(config.Sharing.SharingStrategy())
	out.MigStrategy = *config.Flags.MigStrategy
	out.FailOnInitError = *config.Flags.FailOnInitError
	if block := config.Sharing.ReplicatedResources(); block != nil {
		out.RenameByDefault = block.RenameByDefault
		out.FailRequestsGreaterThanOne = block.FailRequestsGreaterThanOne
		for _, r := range block.Resources {
			out.Resources = append(out.Resources, entry{Name: string(r.Name), Rename: string(r.Rename), Replicas: r.Replicas})
		}
	}
	return out
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		panic(err)
	}
	var requests []request
	if err := json.Unmarshal(raw, &requests); err != nil {
		panic(err)
	}
	scratch, err := os.MkdirTemp("", "plugin-oracle-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(scratch)
	answers := make([]answer, 0, len(requests))
	for _, req := range requests {
		answers = append(answers, judge(req, scratch))
	}
	if err := json.NewEncoder(os.Stdout).Encode(answers); err != nil {
		panic(err)
	}
}
