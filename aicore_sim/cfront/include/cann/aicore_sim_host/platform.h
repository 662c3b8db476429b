// aicore-sim's host shim: the platform a host tiling queries (fe::PlatFormInfos and
// platform_ascendc::PlatformAscendC), answered from an aicore-sim platform preset.
//
// Written for aicore-sim from the public Ascend C API reference (PlatformAscendC: GetCoreNum*,
// GetCoreMemSize, GetSocVersion, GetCurNpuArch, GetLibApiWorkSpaceSize) and the call sites of
// host tilings; no vendor code. Every value is the case's platform, sent by the simulator with
// each call (aicore_sim/cfront/host.py), so a what-if platform re-runs the real tiling.
#pragma once

#include <cstdint>
#include <map>
#include <string>

// the NPU architecture a tiling dispatches on (__NPU_ARCH__ numbering)
enum class NpuArch : uint32_t {
    DAV_1001 = 1001, DAV_2002 = 2002, DAV_2201 = 2201, DAV_3002 = 3002, DAV_3102 = 3102,
    DAV_3510 = 3510, DAV_5102 = 5102, DAV_RESV = 0xFFFFFFFFu
};

// the Ascend C host-side tiling helpers live here (none yet: a call names itself missing)
namespace AscendC {}

namespace fe {

// the platform description one tiling call receives: the preset's numbers by name
class PlatFormInfos {
public:
    std::string soc_version;     // short SoC version, e.g. Ascend910B
    uint32_t npu_arch = 0;       // 2201, 3510
    uint32_t aiv_num = 0;        // vector cores a launch spreads over
    uint32_t aic_num = 0;        // cube cores
    uint64_t ub_size = 0;        // UB bytes a kernel may use
    uint64_t l1_size = 0, l0a_size = 0, l0b_size = 0, l0c_size = 0, l2_size = 0;
    uint64_t hbm_size = 0;
    uint64_t lib_api_workspace = 0;  // the Ascend C library's system workspace bytes
    std::map<std::string, std::string> res;  // "label/key" -> value (GetPlatformRes)

    bool GetPlatformRes(const std::string& label, const std::string& key, std::string& val) const {
        auto it = res.find(label + "/" + key);
        if (it == res.end()) return false;
        val = it->second;
        return true;
    }
    bool GetPlatformResWithLock(const std::string& label, const std::string& key,
                                std::string& val) const {
        return GetPlatformRes(label, key, val);
    }
    uint32_t GetCoreNum() const { return aiv_num; }
};

class OptionalInfos {};

}  // namespace fe

namespace platform_ascendc {

enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

enum class SocVersion {
    ASCEND910 = 0, ASCEND910B, ASCEND910_93, ASCEND310P, ASCEND310B, ASCEND910E, ASCEND950,
    RESERVED_VERSION = 99999
};

class PlatformAscendC {
public:
    explicit PlatformAscendC(fe::PlatFormInfos* info) : info_(info) {}
    PlatformAscendC() = default;

    uint32_t GetCoreNumAiv() const { return info_ ? info_->aiv_num : 0; }
    uint32_t GetCoreNumAic() const { return info_ ? info_->aic_num : 0; }
    // ASSUMPTION (the reference is silent for split-core SoCs): the vector core count,
    // the count a vector kernel's launch spreads over
    uint32_t GetCoreNum() const { return GetCoreNumAiv(); }
    uint32_t GetCoreNumVector() const { return GetCoreNumAiv(); }

    void GetCoreMemSize(CoreMemType type, uint64_t& size) const {
        size = 0;
        if (info_ == nullptr) return;
        switch (type) {
            case CoreMemType::UB: size = info_->ub_size; break;
            case CoreMemType::L1: size = info_->l1_size; break;
            case CoreMemType::L0_A: size = info_->l0a_size; break;
            case CoreMemType::L0_B: size = info_->l0b_size; break;
            case CoreMemType::L0_C: size = info_->l0c_size; break;
            case CoreMemType::L2: size = info_->l2_size; break;
            case CoreMemType::HBM: size = info_->hbm_size; break;
            default: break;
        }
    }

    SocVersion GetSocVersion() const {
        if (info_ == nullptr) return SocVersion::RESERVED_VERSION;
        const std::string& s = info_->soc_version;
        if (s == "Ascend910B") return SocVersion::ASCEND910B;
        if (s == "Ascend910_93") return SocVersion::ASCEND910_93;
        if (s == "Ascend950") return SocVersion::ASCEND950;
        if (s == "Ascend310P") return SocVersion::ASCEND310P;
        if (s == "Ascend310B") return SocVersion::ASCEND310B;
        if (s == "Ascend910") return SocVersion::ASCEND910;
        return SocVersion::RESERVED_VERSION;
    }

    NpuArch GetCurNpuArch() const {
        return info_ == nullptr || info_->npu_arch == 0 ? NpuArch::DAV_RESV
                                                       : static_cast<NpuArch>(info_->npu_arch);
    }

    uint32_t GetLibApiWorkSpaceSize() const {
        return info_ ? static_cast<uint32_t>(info_->lib_api_workspace) : 0;
    }

private:
    fe::PlatFormInfos* info_ = nullptr;
};

}  // namespace platform_ascendc
