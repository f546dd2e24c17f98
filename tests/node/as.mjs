// A real OAuth 2.0 authorization server for the oauth end-to-end tests
// (tests/oauth_test.go): oauth2-mock-server, issuing RS256 JWT access tokens
// from its token endpoint and publishing its OpenID configuration and JWKS.
//
// The authorization code flow with PKCE works too: /authorize redirects at
// once with a code (no login page), and the token has the scope and resource
// the authorization request asked for.
//
// It prints {"issuer": URL} once listening on 127.0.0.1 and runs until its
// standard input closes.
//
// A client_credentials token request may shape the token with extra form
// fields, so that the tests can ask for the tokens a server must refuse:
//   resource   the aud claim (RFC 8707 resource indicator)
//   sub        the sub claim (default "alice")
//   client_id  the client_id claim (default "test-client")
//   iss        an iss claim other than the issuer's
//   exp_in     seconds from now to exp (negative: already expired)
//   nbf_in     seconds from now to nbf
import { OAuth2Server } from 'oauth2-mock-server';

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');

// The authorization code flow (the Go SDK client's): the scope and resource
// of each authorization request, by code, for the token that code buys (the
// mock itself grants the scope "dummy" and no aud).
const grants = new Map();
server.service.on('beforeAuthorizeRedirect', (redirect, req) => {
  const code = redirect.url.searchParams.get('code');
  if (code) grants.set(code, { scope: req.query.scope, resource: req.query.resource });
});

server.service.on('beforeTokenSigning', (token, req) => {
  const b = req.body ?? {};
  const now = Math.floor(Date.now() / 1000);
  token.payload.sub = b.sub ?? 'alice';
  token.payload.client_id = b.client_id ?? 'test-client';
  const grant = b.grant_type === 'authorization_code' ? grants.get(b.code) : undefined;
  if (grant !== undefined) {
    token.payload.scope = grant.scope;
    token.payload.aud = b.resource ?? grant.resource;
  }
  if (b.resource !== undefined) token.payload.aud = b.resource;
  if (b.iss !== undefined) token.payload.iss = b.iss;
  if (b.exp_in !== undefined) token.payload.exp = now + Number(b.exp_in);
  if (b.nbf_in !== undefined) token.payload.nbf = now + Number(b.nbf_in);
});

await server.start(0, '127.0.0.1');
console.log(JSON.stringify({ issuer: server.issuer.url }));

process.stdin.resume();
process.stdin.on('end', async () => {
  await server.stop();
  process.exit(0);
});
