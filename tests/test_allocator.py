"""jaket.paths.allocator_environment: freed memory stays in the process (glibc), and a user's own
allocator settings win. Each case runs in a fresh interpreter, since mallopt changes the whole process."""

import json
import os
import platform
import subprocess
import sys

import pytest

# Allocate and free a 64 MiB buffer 40 times, touching every page: with glibc's defaults each one is a
# fresh mmap (above the 32 MiB its threshold adapts to) whose 16,384 pages the kernel faults in; with
# the heap kept, the pages of the first few are reused (its growth varies from run to run: 1-5 buffers).
PROBE = """
import json, resource, sys
import torch
from jaket.paths import allocator_environment
changed = allocator_environment() if sys.argv[1] == "1" else None
torch.ones(16 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    torch.ones(16 << 20)
print(json.dumps({"changed": changed, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""

def huge_pages_always() -> bool:
    """Transparent huge pages for every mapping: a 64 MiB mmap then faults in 32 pages, not 16,384."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[always]" in f.read()
    except OSError:
        return False


glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                           reason="mallopt's parameters are glibc's")


def probe(call: bool, **env) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", PROBE, "1" if call else "0"], env={**clean, **env},
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@glibc
def test_freed_buffers_are_reused_without_page_faults():
    default, kept = probe(call=False), probe(call=True)
    assert kept["changed"] is True
    assert kept["faults"] < 40 * 16384 / 4
    if not huge_pages_always():
        assert default["faults"] > 40 * 16000  # each buffer faulted in again


@glibc
def test_a_users_malloc_environment_wins():
    chosen = probe(call=True, MALLOC_ARENA_MAX="2")
    assert chosen["changed"] is False
    if not huge_pages_always():
        assert chosen["faults"] > 40 * 16000  # glibc's defaults left as they were
