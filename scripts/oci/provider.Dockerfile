# Mock storage provider image, to run in a cluster behind a Service as a cloud endpoint would.
# Build from the repository root:
#   docker build -f scripts/oci/provider.Dockerfile -t bucketoperator-provider:0.1.0 .
# or without Docker, as an OCI archive: npm run build:oci -- --image provider
# (scripts/build-oci-image.ts applies this file's runtime stage, as it applies operator/Dockerfile's).
#
# The same base and Node as the operator's image (operator/Dockerfile): the build stage bundles
# provider/main.ts with its one production dependency (pino) inlined, so no node_modules ships.
FROM --platform=linux/amd64 node:26.12.1-trixie-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY provider ./provider
COPY scripts/bundle.ts ./scripts/bundle.ts
RUN npx tsx scripts/bundle.ts --provider bundle

FROM gcr.io/distroless/nodejs26-debian13:nonroot
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/bundle/provider ./provider
USER 65532:65532
EXPOSE 8090
# Flags as for `npm run provider` (provider/cli.ts); API keys come from PROVIDER_API_KEYS and the
# admin token from PROVIDER_ADMIN_TOKEN. A Pod's `args` replace CMD, the listen address included:
# in a Pod the provider must listen on all addresses, not on its default 127.0.0.1.
ENTRYPOINT ["/nodejs/bin/node", "provider/main.js"]
CMD ["--host", "0.0.0.0", "--port", "8090"]
