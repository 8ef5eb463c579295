import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { asV3 } from '../../../views/config-dump/api-version.js';

describe('asV3', () => {
  it('names every @type by its v3 message and spells renamed fields as v3 does', () => {
    const v2 = {
      '@type': 'type.googleapis.com/envoy.api.v2.Listener',
      name: 'l',
      filter_chains: [
        {
          filters: [
            {
              name: 'envoy.filters.network.http_connection_manager',
              typed_config: {
                '@type':
                  'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
                route_config: {
                  virtual_hosts: [{ routes: [{ route: { cluster: 'c', host_rewrite: 'www.example.org' } }] }],
                },
                http_filters: [
                  {
                    name: 'envoy.filters.http.router',
                    typed_config: {
                      '@type': 'type.googleapis.com/envoy.config.filter.http.router.v2.Router',
                    },
                  },
                ],
              },
            },
          ],
        },
      ],
    };
    assert.deepEqual(asV3(v2), {
      '@type': 'type.googleapis.com/envoy.config.listener.v3.Listener',
      name: 'l',
      filter_chains: [
        {
          filters: [
            {
              name: 'envoy.filters.network.http_connection_manager',
              typed_config: {
                '@type':
                  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
                route_config: {
                  virtual_hosts: [
                    { routes: [{ route: { cluster: 'c', host_rewrite_literal: 'www.example.org' } }] },
                  ],
                },
                http_filters: [
                  {
                    name: 'envoy.filters.http.router',
                    typed_config: {
                      '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
                    },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
  });

  it('keeps a message v3 never moved, and a field named like a renamed one outside a route action', () => {
    assert.deepEqual(
      asV3({ '@type': 'type.googleapis.com/google.protobuf.Struct', value: { host_rewrite: 'x' } }),
      {
        '@type': 'type.googleapis.com/google.protobuf.Struct',
        value: { host_rewrite: 'x' },
      },
    );
  });
});
