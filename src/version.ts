/** The build version as `--version` and `/server_info` print it (five slash-separated fields). */
export const VERSION = '0000000000000000000000000000000000000000/0.1.0-dev/Modified/RELEASE/OpenSSL';
