/**
 * The owner a session is opened for, as the daemon sees it: a hex
 * HMAC-SHA256 of the end user's id under a key derived from the caller's
 * token. The id never leaves this process, and the daemon (which keeps only
 * the token's SHA-256) cannot test a guessed id. Two processes holding the
 * same token send the same digest for the same user, so the daemon's
 * per-owner cap counts them together; different tokens never meet.
 *
 * key   = SHA-256("bulkhead owner digest v1\n" || token)   (as the C manager, src/client/manager.c)
 * owner = lowercase hex HMAC-SHA256(key, UTF-8 user id)   (64 characters)
 */
import { createHash, createHmac } from "node:crypto";

export const OWNER_KEY_DOMAIN = "bulkhead owner digest v1\n";

export function ownerKey(token: string): Buffer {
  return createHash("sha256").update(OWNER_KEY_DOMAIN).update(token, "utf8").digest();
}

export function ownerDigestWith(key: Buffer, owner: string): string {
  return createHmac("sha256", key).update(owner, "utf8").digest("hex");
}

/** The digest for a token and a user id (what Client.ownerDigest sends). */
export function ownerDigest(token: string, owner: string): string {
  return ownerDigestWith(ownerKey(token), owner);
}
