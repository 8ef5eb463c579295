/**
 * A bootstrap's `bootstrap_extensions` and `default_regex_engine` as meshes write them: Istio's
 * internal listener registry (given as a TypedStruct) is accepted with a warning, Kuma's and
 * Envoy Gateway's GoogleRE2 engine is the one every regex here runs on; anything else is
 * refused naming it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorsOf, loadYaml } from '../helpers/bootstrap.js';

const INTERNAL = `{ name: envoy.bootstrap.internal_listener, typed_config: { '@type': type.googleapis.com/udpa.type.v1.TypedStruct, type_url: type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener, value: { buffer_size_kb: 64 } } }`;

describe('bootstrap_extensions and default_regex_engine', () => {
  it("accept Istio's internal listener registry with a warning, and GoogleRE2 by name or by type", () => {
    const loaded = loadYaml(
      `bootstrap_extensions: [${INTERNAL}]\ndefault_regex_engine: { name: envoy.regex_engines.google_re2, typed_config: { '@type': type.googleapis.com/envoy.extensions.regex_engines.v3.GoogleRE2 } }`,
    );
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('\n'));
    assert.match(
      loaded.warnings.join('\n'),
      /bootstrap_extensions\[0\]: the internal listener registry is accepted/,
    );
    assert.ok(
      loadYaml(
        `defaultRegexEngine: { typedConfig: { '@type': type.googleapis.com/envoy.extensions.regex_engines.v3.GoogleRE2 } }`,
      ).ok,
    );
  });

  it('refuse any other extension or engine, naming it', () => {
    const errors = errorsOf(
      loadYaml(
        `bootstrap_extensions: [{ name: envoy.bootstrap.wasm, typed_config: { '@type': type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener, buffer_size_kb: 0 } }, { name: envoy.bootstrap.vcl }]\ndefault_regex_engine: { name: envoy.regex_engines.hyperscan }`,
      ),
    );
    const text = errors.join('\n');
    // By its config's type the first is the registry, whatever its name says.
    assert.doesNotMatch(text, /bootstrap_extensions\[0\]: bootstrap extension/);
    assert.match(
      text,
      /bootstrap_extensions\[1\]: bootstrap extension 'envoy\.bootstrap\.vcl' is not implemented/,
    );
    assert.match(
      text,
      /default_regex_engine: regex engine 'envoy\.regex_engines\.hyperscan' is not implemented \(GoogleRE2 is\)/,
    );
  });
});
