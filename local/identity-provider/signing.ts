/**
 * The token signing key: an RSA key with a self-signed certificate, as Entra publishes each signing key
 * (x5c, and its SHA-1 thumbprint as x5t and kid), kept in the data directory so a restart keeps issued tokens
 * valid (in memory without one); and signJwt, which signs every token the provider issues with it (RS256).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { exportJWK, exportPKCS8, exportSPKI, generateKeyPair, importJWK, importPKCS8, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { generate as generateCertificate } from 'selfsigned';
import { CERTIFICATE_VALIDITY_DAYS, daysFromNow, loadOrCreatePemPair } from '../tls.js';

const FILES = {
  signingCert: 'signing-cert.pem',
  signingKey: 'signing-key.pem',
} as const;

export interface SigningKey {
  kid: string;
  /** Base64url SHA-1 thumbprint of the signing certificate; Entra uses it as the kid too. */
  x5t: string;
  certificateDerBase64: string;
  privateKey: CryptoKey;
  privateJwk: JWK;
  /** Verifies the tokens the provider issued (On-Behalf-Of assertions). */
  publicKey: CryptoKey;
  publicJwk: JWK;
}

export async function loadOrCreateSigningKey(dataDir: string | undefined): Promise<SigningKey> {
  const pems = await loadOrCreatePemPair(dataDir, FILES.signingCert, FILES.signingKey, async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const keyPem = await exportPKCS8(privateKey);
    // Entra publishes each signing key with a certificate (x5c) whose thumbprint is the x5t.
    const certificate = await generateCertificate([{ name: 'commonName', value: 'Local identity provider token signing' }], {
      algorithm: 'sha256',
      notAfterDate: daysFromNow(CERTIFICATE_VALIDITY_DAYS),
      keyPair: { privateKey: keyPem, publicKey: await exportSPKI(publicKey) },
      extensions: [{ name: 'keyUsage', digitalSignature: true, critical: true }],
    });
    return { cert: certificate.cert, key: keyPem };
  });

  const certificateDer = new X509Certificate(pems.cert).raw;
  const x5t = createHash('sha1').update(certificateDer).digest('base64url');
  const privateKey = await importPKCS8(pems.key, 'RS256', { extractable: true });
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid: x5t, use: 'sig', alg: 'RS256' };
  const publicJwk: JWK = { kty: privateJwk.kty, n: privateJwk.n, e: privateJwk.e };
  return {
    kid: x5t,
    x5t,
    certificateDerBase64: certificateDer.toString('base64'),
    privateKey,
    privateJwk,
    publicKey: (await importJWK(publicJwk, 'RS256')) as CryptoKey,
    publicJwk,
  };
}

export function signJwt(payload: JWTPayload, signingKey: SigningKey): Promise<string> {
  return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: signingKey.kid, x5t: signingKey.x5t }).sign(signingKey.privateKey);
}
