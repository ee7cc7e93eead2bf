#!/usr/bin/env python3
"""Writes vectors/tuf-key-ids.json: TUF specification key ids ("KEYID": hex SHA-256 of the
OLPC canonical JSON of {"keytype", "scheme", "keyval"}), computed without @svc/release-core.

Two independent encoders must agree on every case before anything is written:
securesystemslib's formats.encode_canonical (the OLPC canonical JSON python-tuf signs and
hashes with; Debian bookworm package python3-securesystemslib) and, where the key object
holds no character the two treat differently, json.dumps(sort_keys=True, separators=(",", ":")).

Run: /usr/bin/python3 packages/release-core/scripts/make-tuf-key-ids.py
"""
import hashlib
import json
import os
import subprocess

from securesystemslib.formats import encode_canonical

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "vectors")


def raw_ed25519_hex(pub_pem_path):
    # An Ed25519 SPKI DER is a fixed 12-byte prefix followed by the 32-byte public key.
    der = subprocess.run(
        ["openssl", "pkey", "-pubin", "-in", pub_pem_path, "-outform", "DER"], check=True, capture_output=True
    ).stdout
    assert len(der) == 44 and der[:12].hex() == "302a300506032b6570032100"
    return der[12:].hex()


def pem_text(path):
    with open(path, encoding="ascii") as f:
        return f.read()


def case(name, keytype, scheme, keyval, public_key_pem=None):
    obj = {"keytype": keytype, "scheme": scheme, "keyval": keyval}
    olpc = encode_canonical(obj)
    keyid = hashlib.sha256(olpc.encode("utf-8")).hexdigest()
    plain = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if all(c not in s for s in keyval.values() for c in '\n\t\x00\x7f'):
        assert plain == olpc, (name, plain, olpc)
    out = {"name": name, "keytype": keytype, "scheme": scheme, "keyval": keyval, "canonical": olpc, "keyid": keyid}
    if public_key_pem is not None:
        out["public_key_pem"] = public_key_pem
    return out


keys = os.path.join(VECTORS, "keys")
cases = [
    case(
        "ed25519 authorizer key (vectors/keys/authorizer.pub.pem)",
        "ed25519",
        "ed25519",
        {"public": raw_ed25519_hex(os.path.join(keys, "authorizer.pub.pem"))},
        pem_text(os.path.join(keys, "authorizer.pub.pem")),
    ),
    case(
        "ed25519 other authorizer key (vectors/keys/other-authorizer.pub.pem)",
        "ed25519",
        "ed25519",
        {"public": raw_ed25519_hex(os.path.join(keys, "other-authorizer.pub.pem"))},
        pem_text(os.path.join(keys, "other-authorizer.pub.pem")),
    ),
    # securesystemslib's ECDSA keyval: the SPKI PEM text. Its newlines stay raw in OLPC canonical
    # JSON (RFC 8785 would write them as \n), so this case tells the two encodings apart.
    case(
        "ecdsa P-256 device CA key, PEM keyval (vectors/keys/device-ca.pub.pem)",
        "ecdsa",
        "ecdsa-sha2-nistp256",
        {"public": pem_text(os.path.join(keys, "device-ca.pub.pem"))},
    ),
    # Only '"' and '\' are escaped; tab, DEL, U+00E9 and U+1F600 are written as they are (UTF-8).
    case(
        "escaping: only quote and backslash",
        "ed25519",
        "ed25519",
        {"public": 'a"b\\c\td\x7fe\u00e9\U0001F600'},
    ),
    # Keys sorted by code point: "Z" (U+005A) before "a" (U+0061) before "public", and U+FF61
    # before U+1F600 (UTF-16 code unit order would put the surrogate pair 0xD83D first).
    case(
        "sorting: keyval members by code point",
        "ed25519",
        "ed25519",
        {"public": "00", "a": "1", "Z": "2", "\U0001F600": "3", "\uff61": "4"},
    ),
]

with open(os.path.join(VECTORS, "tuf-key-ids.json"), "w", encoding="utf-8") as f:
    json.dump(cases, f, indent=2, ensure_ascii=False)
    f.write("\n")
print(f"wrote {len(cases)} cases")
