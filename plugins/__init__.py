"""Built-in model plugins of nvperf-bridge (installed as ``nvperf_bridge.builtin_plugins``).

Each module is one paper's model and registers it through the
``nvperf_bridge.models`` entry-point group, exactly as a third-party plugin does.
"""
