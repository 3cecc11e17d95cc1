'use strict';
// One measurement of the Evolu storage benchmark: a fresh process (started by storage.js
// with --expose-gc) that opens one stack and runs one workload, and prints the result as
// one JSON line. Argument: the job as JSON, {"stack":"before"|"after","workload":…,
// "seed":…,"quick":…,"cipherlite":<path>}.

const { runWorkload, FULL, QUICK } = require('./lib/storage/workloads');

const job = JSON.parse(process.argv[2] || '{}');
runWorkload(job.stack, job.workload, job.quick ? QUICK : FULL, job.seed, job.cipherlite)
	.then((result) => process.stdout.write(`${JSON.stringify(result)}\n`))
	.catch((error) => {
		console.error(error && error.stack ? error.stack : error);
		process.exit(1);
	});
