// aicore-sim's own test operator definition, in the layout the coverage command reads: the
// inputs and outputs with their dtype columns, and the SoC configs.
static const std::vector<ge::DataType> rowTypes = {ge::DT_FLOAT, ge::DT_FLOAT16};

class ScaleRows : public OpDef {
public:
    explicit ScaleRows(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType(rowTypes);
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16});
        this->AICore().AddConfig("ascend910b");
    }
};
