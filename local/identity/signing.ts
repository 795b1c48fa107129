/**
 * The token signing key: RSA with a self-signed certificate, published as Entra publishes each key (x5c, and
 * the certificate's SHA-1 thumbprint as x5t and kid), and kept in the data directory so that a restart keeps
 * issued tokens valid (in memory without one).
 */
import { createHash, createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { SignJWT, type JWTPayload } from 'jose';
import { generate } from 'selfsigned';
import { loadOrCreateCertificate } from '../tls.js';

export async function loadOrCreateSigner(dataDir: string | undefined) {
  const subject = [{ name: 'commonName', value: 'Local identity provider token signing' }];
  const extensions = [{ name: 'keyUsage' as const, digitalSignature: true, critical: true }];
  const pems = await loadOrCreateCertificate(dataDir, 'signing', () => generate(subject, { algorithm: 'sha256', extensions }));
  const certificateDer = new X509Certificate(pems.cert).raw;
  const kid = createHash('sha1').update(certificateDer).digest('base64url');
  const privateKey = createPrivateKey(pems.key);
  const published = { kid, use: 'sig', x5t: kid, x5c: [certificateDer.toString('base64')] };
  return {
    kid,
    /** The key as the JWKS lists it: no alg, as Entra names none. */
    publicJwk: { ...createPublicKey(privateKey).export({ format: 'jwk' }), ...published },
    privateJwk: { ...privateKey.export({ format: 'jwk' }), ...published, alg: 'RS256' },
    /** Signs these claims, and only these, with the header Entra's tokens have (typ, alg, kid, x5t). */
    sign: (claims: JWTPayload) => new SignJWT(claims).setProtectedHeader({ typ: 'JWT', alg: 'RS256', kid, x5t: kid }).sign(privateKey),
  };
}
