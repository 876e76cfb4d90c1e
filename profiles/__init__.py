"""GPU profiles shipped with nvperf-bridge (installed as ``nvperf_bridge.profiles``); one YAML file per GPU."""
