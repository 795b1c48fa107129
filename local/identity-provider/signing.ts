/**
 * The token signing key in oauth2-mock-server's key store, which publishes it (JWKS) and signs with it:
 * an RSA key with a self-signed certificate, as Entra publishes each signing key (x5c, and its SHA-1
 * thumbprint as x5t and kid), kept in the data directory so a restart keeps issued tokens valid (in
 * memory without one).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { exportJWK, exportPKCS8, exportSPKI, generateKeyPair, importPKCS8, type JWK } from 'jose';
import { OAuth2Issuer } from 'oauth2-mock-server';
import { generate as generateCertificate } from 'selfsigned';
import { CERTIFICATE_VALIDITY_DAYS, daysFromNow, loadOrCreatePemPair } from '../tls.js';

export interface Signer {
  kid: string;
  /** The key as the JWKS lists it: public members, use, x5t and x5c, no alg (Entra names none). */
  publicJwk: JWK;
  privateJwk: JWK;
  /** Signs these claims, and only these, with the header Entra's tokens have (typ, alg, kid, x5t). */
  sign(claims: Record<string, unknown>): Promise<string>;
}

export async function loadOrCreateSigner(dataDir: string | undefined): Promise<Signer> {
  const pems = await loadOrCreatePemPair(dataDir, 'signing-cert.pem', 'signing-key.pem', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const keyPem = await exportPKCS8(privateKey);
    const certificate = await generateCertificate([{ name: 'commonName', value: 'Local identity provider token signing' }], {
      algorithm: 'sha256',
      notAfterDate: daysFromNow(CERTIFICATE_VALIDITY_DAYS),
      keyPair: { privateKey: keyPem, publicKey: await exportSPKI(publicKey) },
      extensions: [{ name: 'keyUsage', digitalSignature: true, critical: true }],
    });
    return { cert: certificate.cert, key: keyPem };
  });
  const certificateDer = new X509Certificate(pems.cert).raw;
  const kid = createHash('sha1').update(certificateDer).digest('base64url');
  const issuer = new OAuth2Issuer();
  // buildToken needs an issuer; every token names its own, per tenant and version.
  issuer.url = 'https://localhost';
  const key = await issuer.keys.add({
    ...(await exportJWK(await importPKCS8(pems.key, 'RS256', { extractable: true }))),
    kid,
    alg: 'RS256',
    use: 'sig',
    x5t: kid,
    x5c: [certificateDer.toString('base64')],
  });
  const { alg: _alg, ...publicJwk } = issuer.keys.toJSON()[0]!;
  return {
    kid,
    publicJwk,
    privateJwk: key,
    sign: (claims) =>
      issuer.buildToken({
        kid,
        scopesOrTransform: (header, payload) => {
          header.x5t = kid;
          for (const name of Object.keys(payload)) delete payload[name];
          Object.assign(payload, claims);
        },
      }),
  };
}
