package gateway

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"talon/protocol"
)

// deviceClockSkew is how far a device signature's signedAt may be from
// now (upstream's window).
const deviceClockSkew = 10 * time.Minute

// verifyDevice checks a device identity proof: the id is the SHA-256 of
// the public key, the signature is fresh, bound to this connection's
// challenge nonce and valid over the v3 or v2 payload. Talon grants
// scopes by shared secret, not by pairing, so a device that proves
// itself gets nothing extra — but one that fails to is refused, since
// it claims an identity it does not hold.
func verifyDevice(d *protocol.Device, p *protocol.ConnectParams, nonce string, now time.Time) *protocol.Error {
	fail := func(code, msg string) *protocol.Error {
		e := protocol.Errorf("device identity rejected: %s", msg)
		e.Details = map[string]any{"code": code}
		return e
	}
	pub, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(d.PublicKey, "="))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fail("DEVICE_AUTH_PUBLIC_KEY_INVALID", "publicKey must be a base64url Ed25519 public key")
	}
	sum := sha256.Sum256(pub)
	if !strings.EqualFold(d.ID, hex.EncodeToString(sum[:])) {
		return fail("DEVICE_AUTH_DEVICE_ID_MISMATCH", "device id is not the SHA-256 of its public key")
	}
	if d.Nonce == "" {
		return fail("DEVICE_AUTH_NONCE_REQUIRED", "device.nonce must echo the connect.challenge nonce")
	}
	if d.Nonce != nonce {
		return fail("DEVICE_AUTH_NONCE_MISMATCH", "device.nonce does not match this connection's challenge")
	}
	if skew := now.Sub(time.UnixMilli(d.SignedAt)); skew > deviceClockSkew || skew < -deviceClockSkew {
		return fail("DEVICE_AUTH_SIGNATURE_EXPIRED", "signedAt is more than 10 minutes from the gateway's clock")
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(d.Signature, "="))
	if err != nil {
		return fail("DEVICE_AUTH_SIGNATURE_INVALID", "signature must be base64url")
	}
	for _, payload := range devicePayloads(d, p) {
		if ed25519.Verify(pub, []byte(payload), sig) {
			return nil
		}
	}
	return fail("DEVICE_AUTH_SIGNATURE_INVALID", "signature does not verify")
}

// devicePayloads are the strings a client may have signed: v3 (binds
// platform and device family) and v2.
func devicePayloads(d *protocol.Device, p *protocol.ConnectParams) []string {
	role := p.Role
	if role == "" {
		role = protocol.RoleOperator
	}
	token := ""
	if p.Auth != nil {
		token = p.Auth.Token
	}
	v2 := []string{"v2", d.ID, p.Client.ID, p.Client.Mode, role, strings.Join(p.Scopes, ","),
		strconv.FormatInt(d.SignedAt, 10), token, d.Nonce}
	v3 := append([]string{"v3"}, v2[1:]...)
	v3 = append(v3, deviceMeta(p.Client.Platform), deviceMeta(p.Client.DeviceFamily))
	return []string{strings.Join(v3, "|"), strings.Join(v2, "|")}
}

// deviceMeta normalises platform and family as signers do: trimmed, ASCII
// letters lower-cased.
func deviceMeta(s string) string {
	s = strings.TrimSpace(s)
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
