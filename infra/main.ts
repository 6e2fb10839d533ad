/** Entry point for `cdk8s synth` (see cdk8s.yaml); `npm run synth` also regenerates imports/. */
import { synthDist } from './app';

synthDist({ outdir: process.env['CDK8S_OUTDIR'] ?? 'dist' });
