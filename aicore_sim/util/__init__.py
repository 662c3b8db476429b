"""The base layer any module may import: background work, atomic writes (staging), the
process's resource limits, and the exact readers of user JSON/TOML (textinput, schema)."""
