/**
 * Minimal valid documents of the media types the server parses itself: an SPDX 2.3 SBOM, a
 * CycloneDX 1.5 SBOM and an OpenVEX 0.2.0 document, each with one package, component or
 * statement whose fields a test overrides.
 */
export function spdxDocument(pkg: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    spdxVersion: 'SPDX-2.3',
    dataLicense: 'CC0-1.0',
    SPDXID: 'SPDXRef-DOCUMENT',
    name: 'app',
    documentNamespace: 'https://example.com/spdx/app-1',
    creationInfo: { created: '2024-01-01T00:00:00Z', creators: ['Tool: test'] },
    packages: [
      {
        SPDXID: 'SPDXRef-a',
        name: 'openssl',
        versionInfo: '3.0.11-1',
        downloadLocation: 'NOASSERTION',
        licenseConcluded: 'Apache-2.0',
        checksums: [{ algorithm: 'SHA256', checksumValue: 'b'.repeat(64) }],
        ...pkg,
      },
    ],
  };
}

export function cyclonedxDocument(component: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    version: 1,
    components: [{ type: 'library', 'bom-ref': 'c0', name: 'left-pad', version: '1.3.0', purl: 'pkg:npm/left-pad@1.3.0', ...component }],
  };
}

export function openvexDocument(statement: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    '@context': 'https://openvex.dev/ns/v0.2.0',
    '@id': 'https://example.com/vex/1',
    author: 'Security Team',
    timestamp: '2024-03-01T00:00:00Z',
    version: 1,
    statements: [
      {
        vulnerability: { name: 'CVE-2021-44228' },
        products: [{ '@id': 'pkg:oci/app@sha256:abc', subcomponents: [{ '@id': 'pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1' }] }],
        status: 'not_affected',
        justification: 'vulnerable_code_not_in_execute_path',
        ...statement,
      },
    ],
  };
}
