// aicore-sim's stand-in for the file helpers a kernel unit test includes.
//
// Written for aicore-sim from the call sites of the kernel unit tests it runs; no vendor code.
// ReadFile reads up to bufferSize bytes of a file (fileSize: the bytes read) and WriteFile
// writes a buffer; both say on stderr why they fail and return false (a test's data file that
// does not exist fails the read, not the run).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

inline bool ReadFile(const std::string& filePath, size_t& fileSize, void* buffer,
                     size_t bufferSize) {
    fileSize = 0;
    std::FILE* f = std::fopen(filePath.c_str(), "rb");
    if (f == nullptr) {
        std::fprintf(stderr, "ReadFile: cannot open %s\n", filePath.c_str());
        return false;
    }
    fileSize = std::fread(buffer, 1, bufferSize, f);
    bool ok = !std::ferror(f);
    std::fclose(f);
    if (!ok) std::fprintf(stderr, "ReadFile: cannot read %s\n", filePath.c_str());
    return ok;
}

inline bool WriteFile(const std::string& filePath, const void* buffer, size_t size) {
    std::FILE* f = std::fopen(filePath.c_str(), "wb");
    if (f == nullptr) {
        std::fprintf(stderr, "WriteFile: cannot open %s\n", filePath.c_str());
        return false;
    }
    bool ok = std::fwrite(buffer, 1, size, f) == size;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) std::fprintf(stderr, "WriteFile: cannot write %s\n", filePath.c_str());
    return ok;
}
