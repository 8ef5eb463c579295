/**
 * What the TLS compile steps (`tls-context.ts`) honour, message by message: each field acts, or
 * is refused by name (docs/tls.md; docs/bootstrap.md lists these tables).
 */
import { acting, type FieldTable, notYet } from '../bootstrap/honoured.js';

export const UPSTREAM_FIELDS: FieldTable = {
  ...acting('common_tls_context', 'sni', 'allow_renegotiation', 'max_session_keys'),
};
export const DOWNSTREAM_FIELDS: FieldTable = {
  ...acting('common_tls_context', 'require_client_certificate', 'require_sni', 'session_timeout'),
  ...acting('disable_stateless_session_resumption'),
  session_ticket_keys: notYet('session_ticket_keys (80-byte reference keys; Node takes 48)'),
  session_ticket_keys_sds_secret_config: notYet(
    'session_ticket_keys (80-byte reference keys; Node takes 48)',
  ),
};
export const COMMON_FIELDS: FieldTable = {
  ...acting('tls_params', 'tls_certificates', 'alpn_protocols', 'validation_context'),
  ...acting('tls_certificate_sds_secret_configs', 'validation_context_sds_secret_config'),
  ...acting('combined_validation_context'),
};
/** A reference by name alone is a static secret; one with an `sds_config` is discovered from it. */
export const SDS_SECRET_FIELDS: FieldTable = acting('name', 'sds_config');
export const COMBINED_VALIDATION_FIELDS: FieldTable = acting(
  'default_validation_context',
  'validation_context_sds_secret_config',
);
export const SECRET_FIELDS: FieldTable = {
  ...acting('name', 'tls_certificate', 'validation_context'),
  session_ticket_keys: notYet('session_ticket_keys (80-byte reference keys; Node takes 48)'),
  generic_secret: notYet('generic secrets'),
};
export const PARAMS_FIELDS: FieldTable = acting(
  'tls_minimum_protocol_version',
  'tls_maximum_protocol_version',
  'cipher_suites',
  'ecdh_curves',
);
export const CERTIFICATE_FIELDS: FieldTable = {
  ...acting('certificate_chain', 'private_key', 'password'),
  private_key_provider: notYet('private key providers'),
  ocsp_staple: notYet('OCSP stapling'),
  signed_certificate_timestamp: notYet('signed certificate timestamps'),
};
export const VALIDATION_FIELDS: FieldTable = {
  ...acting('trusted_ca', 'verify_subject_alt_name', 'match_subject_alt_names', 'crl'),
  ...acting('match_typed_subject_alt_names'),
  ...acting('verify_certificate_hash', 'verify_certificate_spki', 'allow_expired_certificate'),
  ...acting('trust_chain_verification'),
  require_ocsp_staple: notYet('OCSP stapling'),
  require_signed_certificate_timestamp: notYet('signed certificate timestamps'),
};
export const DATA_SOURCE_FIELDS: FieldTable = acting('filename', 'inline_bytes', 'inline_string');
export const SAN_MATCHER_FIELDS: FieldTable = {
  ...acting('san_type', 'matcher'),
  oid: notYet('SubjectAltNameMatcher.oid (OTHER_NAME SANs)'),
};

/** The field tables of the TLS messages, by the message name their findings use. */
export const FIELD_TABLES = {
  UpstreamTlsContext: UPSTREAM_FIELDS,
  DownstreamTlsContext: DOWNSTREAM_FIELDS,
  CommonTlsContext: COMMON_FIELDS,
  TlsParameters: PARAMS_FIELDS,
  TlsCertificate: CERTIFICATE_FIELDS,
  CertificateValidationContext: VALIDATION_FIELDS,
  DataSource: DATA_SOURCE_FIELDS,
  SubjectAltNameMatcher: SAN_MATCHER_FIELDS,
  SdsSecretConfig: SDS_SECRET_FIELDS,
  CombinedCertificateValidationContext: COMBINED_VALIDATION_FIELDS,
  Secret: SECRET_FIELDS,
};
