// aicore-sim's own test operator: its kernel calls an API item the shim does not provide.
class LacksApi : public OpDef {
public:
    explicit LacksApi(const char* name) : OpDef(name)
    {
        this->Input("x").DataType({ge::DT_INT32});
        this->AICore().AddConfig("ascend910_93");
    }
};
