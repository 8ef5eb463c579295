{
  "targets": [
    {
      "target_name": "sockopt",
      "sources": ["sockopt.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"],
      "defines": ["NAPI_VERSION=8"]
    },
    {
      "target_name": "memory",
      "sources": ["memory.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
