/* Base64 both ways. Written here rather than taken from libcrypto because the
 * decoder must be liberal in exactly the ways proto3 JSON and Connect are:
 * standard or URL-safe alphabet, padded or not. It is strict about the rest
 * (no whitespace, no stray characters, no mixed alphabets, no impossible
 * lengths). */
#include "wire_internal.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *wire_base64_encode(const void *data, size_t len, bool pad)
{
	const uint8_t *p = data;
	char *out = xzalloc((len + 2) / 3 * 4 + 1);
	size_t o = 0, i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = alphabet[v & 63];
	}
	size_t rest = len - i;
	if (rest) {
		uint32_t v = (uint32_t)p[i] << 16 | (rest == 2 ? (uint32_t)p[i + 1] << 8 : 0);
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		if (rest == 2)
			out[o++] = alphabet[v >> 6 & 63];
		if (pad) {
			out[o++] = '=';
			if (rest == 1)
				out[o++] = '=';
		}
	}
	out[o] = '\0';
	return out;
}

/* -1 for a character outside both alphabets. Mixing them is refused too:
 * no encoder produces a value with '+' and '-' both. */
static int sextet(char c, int *url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	int is_url = c == '-' || c == '_';
	if (c != '+' && c != '/' && !is_url)
		return -1;
	if (*url >= 0 && *url != is_url)
		return -1;
	*url = is_url;
	return c == '+' || c == '-' ? 62 : 63;
}

int wire_base64_decode(const char *s, size_t len, uint8_t **out, size_t *out_len)
{
	size_t core = len;
	while (core > 0 && s[core - 1] == '=')
		core--;
	size_t pads = len - core;
	/* A group of one character carries no whole byte; padding, when present,
	 * must complete the last group exactly. */
	if (core % 4 == 1 || pads > 2 || (pads && (core + pads) % 4 != 0))
		return -1;
	uint8_t *buf = xzalloc(core / 4 * 3 + 3);
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0, url = -1;
	for (size_t i = 0; i < core; i++) {
		int v = sextet(s[i], &url);
		if (v < 0) {
			free(buf);
			return -1;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Leftover bits that are not zero are ignored, as Go's (non-strict)
	 * decoder and Node's do: the bytes, which are what a digest covers, are
	 * the same either way. */
	*out = buf;
	*out_len = o;
	return 0;
}
