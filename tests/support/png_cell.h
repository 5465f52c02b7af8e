/* A cell that makes a PNG in /work (matplotlib's when the sandbox has it,
 * else one written byte by byte with zlib) and prints its SHA-256: what
 * the tests of saving a file from a sandbox compare the saved copy with. */
#ifndef BH_TEST_PNG_CELL_H
#define BH_TEST_PNG_CELL_H

#define PNG_CELL                                                                                   \
	"import hashlib, struct, zlib\n"                                                           \
	"try:\n"                                                                                   \
	"    import matplotlib\n"                                                                  \
	"    matplotlib.use('Agg')\n"                                                              \
	"    import matplotlib.pyplot as plt\n"                                                    \
	"    plt.plot([1, 2, 3], [1, 4, 9])\n"                                                     \
	"    plt.savefig('/work/plot.png')\n"                                                      \
	"    png = open('/work/plot.png', 'rb').read()\n"                                          \
	"except ImportError:\n"                                                                    \
	"    def chunk(t, d):\n"                                                                   \
	"        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))\n" \
	"    w, h = 64, 48\n"                                                                      \
	"    raw = b''.join(b'\\x00' + bytes(v for x in range(w) for v in (x * 4 % 256, y * 5 % "  \
	"256, (x + y) % 256)) for y in range(h))\n"                                                \
	"    png = (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, " \
	"0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))\n"              \
	"    open('/work/plot.png', 'wb').write(png)\n"                                           \
	"print(hashlib.sha256(png).hexdigest())\n"

#endif
