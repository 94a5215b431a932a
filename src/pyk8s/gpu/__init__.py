"""GPUs: discovery (NVML or declared simulated GPUs) and gpushare's conventions."""
