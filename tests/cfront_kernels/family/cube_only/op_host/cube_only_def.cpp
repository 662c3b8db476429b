// aicore-sim's own test operator with no A2/A3 config: the coverage table leaves it out.
class CubeOnly : public OpDef {
public:
    explicit CubeOnly(const char* name) : OpDef(name)
    {
        this->Input("x").DataType({ge::DT_FLOAT16});
        this->AICore().AddConfig("ascend310p");
    }
};
