'use strict';
// util.inspect(db): a plain object named Database carrying the enumerable getters.

const DatabaseInspection = function Database() {};

module.exports = function inspect() {
  return Object.assign(new DatabaseInspection(), this);
};
