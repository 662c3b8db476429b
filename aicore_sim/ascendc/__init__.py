"""The Ascend C API subset kernel ports import, with Ascend C names kept verbatim.

Each call records one instruction for the running core (see ``aicore_sim.program``) and
applies its effect to the functional image. Template arguments become leading arguments:
``SetFlag(HardEvent.V_MTE2, EVENT_ID0)``, ``buf.GetWithOffset(dtype, n, offset)``.
"""

from aicore_sim.ascendc.datacopy import (
    DataCopy,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    DataCopyPadGm2UBImpl,
    DataCopyPadParams,
    DataCopyPadUB2GMImpl,
    DataCopyParams,
    InitGlobalMemory,
    InitOutput,
    SetAtomicAdd,
    SetAtomicNone,
)
from aicore_sim.ascendc.platform_ascendc import CoreMemType, PlatformAscendC
from aicore_sim.ascendc.sort import (
    Concat,
    Extract,
    GetSortLen,
    GetSortOffset,
    MrgSort,
    MrgSort4Info,
    MrgSortSrcList,
    Sort,
)
from aicore_sim.ascendc.sync import (
    EVENT_ID0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
    PIPE_ALL,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_S,
    PIPE_V,
    GetBlockIdx,
    GetBlockNum,
    PipeBarrier,
    SetFlag,
    SyncAll,
    WaitFlag,
)
from aicore_sim.ascendc.tensors import GM_ADDR, CacheMode, GlobalTensor, LocalTensor, TPosition
from aicore_sim.ascendc.tpipe import GetTPipePtr, TBuf, TPipe, TQue, TQueBind
from aicore_sim.ascendc.utils import DivCeil, GetUserWorkspace, InitSocState, ToFloat
from aicore_sim.ascendc.vector import (
    CAST_CEIL,
    CAST_FLOOR,
    CAST_NONE,
    CAST_ODD,
    CAST_RINT,
    CAST_ROUND,
    CAST_TRUNC,
    MASK_PLACEHOLDER,
    Abs,
    Add,
    Adds,
    ArithProgression,
    BinaryRepeatParams,
    BlockReduceSum,
    Cast,
    Copy,
    CopyRepeatParams,
    CreateVecIndex,
    Div,
    Duplicate,
    Exp,
    Max,
    Maxs,
    Min,
    Mins,
    Mul,
    Muls,
    ReduceMax,
    ReduceSum,
    Relu,
    ResetMask,
    SetDeqScale,
    SetVectorMask,
    Sqrt,
    Sub,
    UnaryRepeatParams,
    WholeReduceSum,
)
from aicore_sim.dtypes import (
    bfloat16,
    float16,
    float32,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
)
from aicore_sim.isa import HardEvent, RoundMode

half = float16

__all__ = [
    "DataCopyPadGm2UBImpl", "DataCopyPadUB2GMImpl", "MASK_PLACEHOLDER", "ResetMask",
    "SetDeqScale", "SetVectorMask",
    "Concat", "Extract", "GetSortLen", "GetSortOffset", "MrgSort", "MrgSort4Info",
    "MrgSortSrcList", "Sort",
    "ArithProgression", "CreateVecIndex", "InitGlobalMemory", "InitOutput", "ReduceMax",
    "ReduceSum", "ToFloat",
    "SetAtomicAdd", "SetAtomicNone", "GetUserWorkspace",
    "CAST_CEIL", "CAST_FLOOR", "CAST_ODD", "CAST_ROUND", "CAST_TRUNC", "Abs", "Adds", "Div",
    "Exp", "Max", "Maxs", "Min", "Mins", "Relu", "Sqrt", "Sub", "UnaryRepeatParams", "int8",
    "int16", "uint8", "uint16", "uint32",
    "BinaryRepeatParams", "CacheMode", "DataCopyPadParams", "DataCopyParams", "DivCeil",
    "InitSocState",
    "CAST_NONE", "CAST_RINT", "EVENT_ID0", "EVENT_ID1", "EVENT_ID2", "EVENT_ID3", "EVENT_ID4",
    "EVENT_ID5", "EVENT_ID6", "EVENT_ID7", "GM_ADDR", "PIPE_ALL", "PIPE_MTE2", "PIPE_MTE3",
    "PIPE_S", "PIPE_V", "Add", "BlockReduceSum", "Cast", "Copy", "CopyRepeatParams",
    "CoreMemType", "DataCopy", "DataCopyExtParams", "DataCopyPad", "DataCopyPadExtParams",
    "Duplicate", "GetBlockIdx", "GetBlockNum", "GetTPipePtr", "GlobalTensor", "HardEvent",
    "LocalTensor", "Mul", "Muls",
    "PipeBarrier", "PlatformAscendC", "RoundMode", "SetFlag", "TBuf", "TPipe", "TPosition",
    "TQue", "TQueBind", "SyncAll", "WaitFlag", "WholeReduceSum", "bfloat16", "float16",
    "float32", "half", "int32", "int64",
]
