/**
 * What spawn() uses of the cgroup code, as one module for its lazy accessor (../lazy/cgroup.ts):
 * a spawn that does not ask for a cgroup never loads where.ts or make.ts.
 */
export { cgroupCapability } from './where'
export { isCgroupRemoved, makeChildCgroup, removeWhenEmpty, whyUncontained } from './make'
