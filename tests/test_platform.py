"""Tests of aicore_sim.sim.platform: presets, derived figures, loading forms, overrides, errors."""

from __future__ import annotations

import dataclasses

import pytest

from aicore_sim.sim.platform import (
    Costs,
    Platform,
    launch_problem,
    list_cost_families,
    list_presets,
    load_platform,
)

PRESETS = [
    "ascend910_9391",
    "ascend910b1",
    "ascend910b2",
    "ascend910b3",
    "ascend910b4",
    "ascend950dt_9581",
    "ascend950pr_9589",
    "ut-fake-910b",
]


def test_list_presets_and_families() -> None:
    assert set(PRESETS) <= set(list_presets())  # other test presets may sit beside these
    assert {"950", "a2"} <= set(list_cost_families())


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_loads(name: str) -> None:
    p = load_platform(name)
    assert p.name == name
    assert p.aiv_core_num == 2 * p.aic_core_num  # every preset keeps the 1:2 AIC:AIV split
    assert p.queue_depth == 32
    assert p.costs.mte2_curve.size_bytes[0] == 1024


def test_910b1_figures() -> None:
    p = load_platform("ascend910b1")
    assert (p.soc, p.short_soc, p.arch) == ("Ascend910B1", "Ascend910B", "dav-c220-vec")
    assert p.aiv_core_num == 48 and p.aic_core_num == 24
    assert p.clock_mhz == 1850.0
    assert p.ub_size == 196608
    assert p.core_mem_size_ub == 196352  # 196608 - 256 (Ascend910B reserve, S3)
    assert p.hbm_bytes_per_cycle == 768.0  # 24 AIC x ddr_rate 32 x efficiency 1.0
    assert p.l2_bytes_per_cycle == 2640.0  # 24 x l2_read_rate 110
    assert p.l2_size == 192 * 1024 * 1024
    assert (p.dcache_size, p.dcache_line) == (32768, 64)
    assert (p.dcache_hit_cycles, p.dcache_miss_cycles, p.ub_read_cycles) == (4, 200, 11)
    assert p.ub_physical_size == 196608
    # launch overhead 460 ns + 139.1 ns per core beyond the first, at 1.85 GHz:
    # (460 + 47 x 139.1) x 1.85 = 12,945.7 -> 12,946 cycles
    assert p.launch_cycles(48) == 12946
    assert p.kernel_entry_reads == 1
    assert p.op_head_cycles == 300
    assert p.costs.family == "a2"


def test_other_preset_figures() -> None:
    b4 = load_platform("ascend910b4")
    assert (b4.aiv_core_num, b4.clock_mhz, b4.core_mem_size_ub) == (40, 1650.0, 196352)
    assert b4.hbm_bytes_per_cycle == 640.0  # 20 x 32
    a3 = load_platform("ascend910_9391")
    assert a3.short_soc == "Ascend910_93"
    assert a3.core_mem_size_ub == 196352  # the 256-byte cut also applies to Ascend910_93
    pr = load_platform("ascend950pr_9589")
    assert (pr.aiv_core_num, pr.clock_mhz) == (64, 1650.0)
    assert pr.core_mem_size_ub == 253952  # no cut on Ascend950
    assert pr.hbm_bytes_per_cycle == 992.0  # 32 AIC x 31
    assert pr.costs.family == "950" and pr.op_head_cycles == 0
    dt = load_platform("ascend950dt_9581")
    assert dt.hbm_bytes_per_cycle == 2560.0  # 32 x 80


def test_ut_fake() -> None:
    p = load_platform("ut-fake-910b")
    assert p.aiv_core_num == 64
    assert p.ub_size == 262144
    assert p.short_soc == "Ascend910B"
    assert p.core_mem_size_ub == 261888  # 262144 - 256
    assert p.clock_mhz == 1850.0


def test_us_conversion() -> None:
    p = load_platform("ascend910b1")
    assert p.us(1850) == pytest.approx(1.0)  # 1850 cycles at 1850 MHz = 1 us
    assert p.cycles(2.0) == pytest.approx(3700.0)
    assert p.cycle_ns == pytest.approx(1000 / 1850)


def test_preset_name_is_case_insensitive_and_cached() -> None:
    assert load_platform("ASCEND910B1") is load_platform("ascend910b1")


def test_with_overrides() -> None:
    p = load_platform("ascend910b1")
    q = p.with_overrides(aiv_core_num=8, ub_size=131072, clock_mhz=1000)
    assert (q.aiv_core_num, q.ub_size, q.clock_mhz) == (8, 131072, 1000.0)
    assert q.core_mem_size_ub == 131072 - 256
    assert q.name == "ascend910b1"
    assert q.overridden == ("aiv_core_num", "ub_size", "clock_mhz")
    assert p.aiv_core_num == 48  # the original is untouched (frozen)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.aiv_core_num = 1  # type: ignore[misc]


def test_override_aliases_and_hbm_rate() -> None:
    p = load_platform("ascend910b1")
    q = p.with_overrides(core_num=16, ub_size_bytes=65536)
    assert (q.aiv_core_num, q.ub_size) == (16, 65536)
    r = p.with_overrides(hbm_bytes_per_cycle=384)
    assert r.hbm_bytes_per_cycle == pytest.approx(384.0)
    assert r.hbm_efficiency == pytest.approx(0.5)  # 384 / (24 x 32)


def test_override_costs() -> None:
    p = load_platform("ascend910b1")
    q = p.with_overrides(costs={"mte2_profile": "mskpp_910b1_gm_to_ub", "set_flag_cycles": 5})
    assert q.costs.mte2_profile == "mskpp_910b1_gm_to_ub"
    assert q.costs.set_flag_cycles == 5
    assert p.costs.set_flag_cycles == 2
    r = p.with_overrides(costs="950")
    assert r.costs.family == "950" and r.costs.vector_model == "vf"
    assert isinstance(r.costs, Costs)
    with pytest.raises(ValueError, match="no copy curve 'nope'"):
        p.with_overrides(costs={"mte2_profile": "nope"})
    with pytest.raises(ValueError, match="unknown costs field 'bogus'"):
        p.with_overrides(costs={"bogus": 1})


def test_bad_override_errors() -> None:
    p = load_platform("ascend910b1")
    with pytest.raises(
        ValueError, match="unknown platform field 'ub_sise'.*valid fields:.*ub_size"
    ):
        p.with_overrides(ub_sise=1)
    with pytest.raises(ValueError, match="'aiv_core_num': expected an integer >= 1 and <= "
                                         "1024, got \"48\""):
        p.with_overrides(aiv_core_num="48")
    with pytest.raises(ValueError, match="'aiv_core_num': expected an integer"):
        p.with_overrides(aiv_core_num=2.5)
    with pytest.raises(ValueError, match="'ub_size': expected an integer >= 1"):
        p.with_overrides(ub_size=-1)
    with pytest.raises(ValueError, match="'clock_mhz': expected a finite number >= 0.001"):
        p.with_overrides(clock_mhz=0)
    with pytest.raises(ValueError, match="'short_soc' must be one of"):
        p.with_overrides(short_soc="Ascend310P")
    with pytest.raises(ValueError, match="'dcache_hit_cycles': expected an integer >= 0 and "
                                         "<= 1e\\+06, got true"):
        p.with_overrides(dcache_hit_cycles=True)
    # ub_size 256 on Ascend910B: GetCoreMemSize(UB) = 256 - 256 = 0. Upstream's tiling UT
    # builds such a platform (prob_none_tiny_ub), so it loads; a launch refuses it.
    tiny = p.with_overrides(ub_size=256)
    assert tiny.core_mem_size_ub == 0
    assert "leaves no usable UB" in (launch_problem(tiny) or "")
    assert launch_problem(p) is None


def test_load_forms() -> None:
    base = load_platform("ascend910b1")
    assert load_platform(base) is base
    assert load_platform(base, aiv_core_num=4).aiv_core_num == 4
    d = load_platform({"preset": "ascend910b3", "ub_size": 131072})
    assert (d.name, d.aiv_core_num, d.ub_size) == ("ascend910b3", 40, 131072)
    assert load_platform("ascend910b1", clock_mhz=1000).clock_mhz == 1000.0


def test_load_full_dict_uses_nearest_family() -> None:
    p = load_platform({"core_num": 64, "ub_size": 262144, "soc": "Ascend910B"})
    assert p.name == "custom"
    assert (p.aiv_core_num, p.ub_size, p.short_soc) == (64, 262144, "Ascend910B")
    assert p.core_mem_size_ub == 261888  # 262144 - 256
    assert p.clock_mhz == 1850.0  # the rest from ascend910b1
    q = load_platform({"soc": "Ascend950PR_9579", "aiv_core_num": 56})
    assert (q.short_soc, q.core_mem_size_ub, q.costs.family) == ("Ascend950", 253952, "950")
    with pytest.raises(ValueError, match="cannot tell the SoC family of 'Ascend310P3'"):
        load_platform({"soc": "Ascend310P3"})


def test_load_from_toml_path(tmp_path) -> None:
    src = (
        'soc = "Ascend910B1"\nshort_soc = "Ascend910B"\narch = "dav-c220-vec"\ncosts = "a2"\n'
        "aic_cores = 1\naiv_cores = 2\nclock_mhz = 1000.0\nub_size_bytes = 4096\n"
        "ub_align_bytes = 32\nl2_size_bytes = 1048576\nhbm_size_bytes = 1073741824\n"
        "ddr_rate_bytes_per_cycle = 1.0\nhbm_efficiency_ratio = 1.0\n"
        "l2_rate_bytes_per_cycle = 2.0\nqueue_depth_entries = 4\ndcache_size_bytes = 1024\n"
        "dcache_line_bytes = 64\ndcache_hit_cycles = 1\ndcache_miss_cycles = 10\n"
        "ub_read_cycles = 1\nop_head_cycles = 0\nsystem_counter_mhz = 50.0\n"
        "ub_physical_bytes = 4096\nlaunch_fixed_ns = 0.0\nlaunch_per_core_ns = 0.0\n"
        "kernel_entry_reads = 0\n"
    )
    path = tmp_path / "tiny.toml"
    path.write_text(src)
    p = load_platform(path)
    assert p.name == "tiny"
    assert p.hbm_bytes_per_cycle == 1.0  # 1 AIC x 1 B/cycle: a round test platform
    assert p.core_mem_size_ub == 3840  # 4096 - 256
    assert load_platform(str(path)).queue_depth == 4
    path.write_text(src + "bogus_bytes = 3\n")
    with pytest.raises(ValueError, match=r"platform 'tiny' \(tiny.toml\): unknown keys"):
        load_platform(path)
    path.write_text(src.replace("queue_depth_entries = 4\n", ""))
    with pytest.raises(ValueError, match="missing keys.*queue_depth_entries"):
        load_platform(path)


def test_unknown_preset_lists_presets() -> None:
    with pytest.raises(ValueError, match="unknown platform preset 'ascend910c'.*ascend910b1"):
        load_platform("ascend910c")
    with pytest.raises(ValueError, match="does not exist"):
        load_platform("no/such/file.toml")


def test_platform_is_hashable_and_equal_by_value() -> None:
    a = load_platform("ascend910b1").with_overrides(ub_size=65536)
    b = load_platform("ascend910b1").with_overrides(ub_size=65536)
    assert a == b and hash(a) == hash(b)
    assert isinstance(a, Platform)
